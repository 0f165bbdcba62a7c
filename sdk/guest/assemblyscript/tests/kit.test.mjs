// Runs tests/build/check.wasm (built by `npm test`) under a fake host that
// implements the guardrail imports, and checks what the kit read and wrote.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const bytes = readFileSync(new URL("./build/check.wasm", import.meta.url));
const module = new WebAssembly.Module(bytes);

function run(envelope, text) {
  const raw = typeof envelope === "string" ? envelope : JSON.stringify(envelope);
  const params = JSON.stringify(JSON.parse(raw).parameters ?? {});
  const inputs = [raw, text, params].map(
    (s) => new TextEncoder().encode(s),
  );
  let memory;
  let output = null;
  const logs = [];
  const host = {
    guardrail: {
      read_input(kind, buf, limit) {
        const b = inputs[kind];
        if (b.length <= limit) new Uint8Array(memory.buffer, buf, b.length).set(b);
        return b.length;
      },
      write_output(ptr, len) {
        output = new TextDecoder().decode(new Uint8Array(memory.buffer, ptr, len).slice());
      },
      log(level, ptr, len) {
        logs.push([level, new TextDecoder().decode(new Uint8Array(memory.buffer, ptr, len).slice())]);
      },
    },
    env: {
      abort() {
        throw new Error("abort");
      },
    },
  };
  const instance = new WebAssembly.Instance(module, host);
  memory = instance.exports.memory;
  const status = instance.exports.guardrail_check();
  return { status, output: output === null ? null : JSON.parse(output), text: output, logs };
}

test("echo: envelope, text, parameters, output encoding", () => {
  const big = "x".repeat(10000) + " ünïcödé \u{1F600}";
  const env = {
    abi: 1,
    hook: "beforeRequestHook",
    function: "echo",
    plugin: { id: "t", version: 1 },
    parameters: { n: 2.5, flag: true, words: ["a", 3, "b\"c"], nested: { x: [null, false, -1e3] } },
    request: { json: { model: "m", seed: 12345678901234567890, messages: [{ role: "user", content: "hi\n\t\"there\"" }] } },
    metadata: { trace_id: "abc" },
  };
  const { status, output, logs } = run(env, big);
  assert.equal(status, 0);
  assert.equal(output.verdict, false);
  assert.equal(output.reason, 'echo "quoted"\n');
  assert.equal(output.data.text, big);
  assert.equal(output.data.hook, "beforeRequestHook");
  assert.equal(output.data.function, "echo");
  assert.equal(output.data.n, 2.5);
  assert.equal(output.data.flag, true);
  assert.deepEqual(output.data.words, ["a", 'b"c']);
  assert.deepEqual(output.data.params, env.parameters);
  assert.deepEqual(output.data.metadata, { trace_id: "abc" });
  assert.equal(output.data.badParses, true);
  assert.deepEqual(output.transformed.request.json.messages, env.request.json.messages);
  assert.equal(output.transformed.request.json.touched, true);
  assert.deepEqual(logs, [[0, "echo echo"]]);
});

test("numbers keep their source text", () => {
  const raw = '{"hook":"beforeRequestHook","parameters":{},"request":{"json":{"seed":12345678901234567890,"f":1.5e300}}}';
  const { output, text } = run(raw, "");
  assert.ok(text.includes('"seed":12345678901234567890'), text);
  assert.ok(text.includes('"f":1.5e300'), text);
  assert.equal(output.transformed.request.json.touched, true);
});

test("text mode and errors", () => {
  assert.deepEqual(run({ parameters: { mode: "text" } }, "a").output, { verdict: true });
  assert.equal(run({ parameters: { mode: "text" } }, "").output.verdict, false);
  const r = run({ parameters: { mode: "error" } }, "");
  assert.notEqual(r.status, 0);
  assert.equal(r.output, null);
  assert.equal(r.logs[0][0], 2);
});
