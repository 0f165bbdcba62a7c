// A test guardrail that echoes what the kit read, for kit.test.mjs.
import { handle, Input, Output, Value, parse, log, LOG_INFO } from "../assembly/index";
export { guardrail_abi_v1, guardrail_check } from "../assembly/index";

handle((input: Input): Output => {
  const mode = input.paramString("mode", "echo");
  if (mode == "error") return Output.error("asked to fail");
  if (mode == "text") return input.text().length > 0 ? Output.pass() : Output.fail("empty");
  log(LOG_INFO, "echo " + input.functionId());
  const data = Value.object()
    .set("text", Value.fromString(input.text()))
    .set("hook", Value.fromString(input.hook()))
    .set("function", Value.fromString(input.functionId()))
    .set("n", Value.fromNumber(input.paramNumber("n", -1)))
    .set("flag", Value.fromBool(input.paramBool("flag", false)))
    .set("words", Value.fromStrings(input.paramStrings("words")))
    .set("params", input.parameters())
    .set("metadata", input.metadata());
  const bad = parse("{\"a\":");
  data.set("badParses", Value.fromBool(bad == null));
  const out = Output.fail("echo \"quoted\"\n", data);
  const body = input.requestJSON();
  if (body != null) {
    body.set("touched", Value.fromBool(true));
    out.transformed(input, body);
  }
  return out;
});
