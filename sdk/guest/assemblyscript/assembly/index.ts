// AssemblyScript guest kit for the gateway's WebAssembly guardrails, ABI v1.
//
//   import { handle, Input, Output } from "guardrail-as";
//   export { guardrail_abi_v1, guardrail_check } from "guardrail-as";
//
//   handle((input: Input): Output => {
//     return input.text().length > 0 ? Output.pass() : Output.fail("empty");
//   });
//
// Build with `asc assembly/index.ts --runtime incremental --optimize`.
// The re-export line is required: AssemblyScript exports only what the
// entry file exports.

import { Value, Kind, parse, quote } from "./json";

export { Value, Kind, parse, quote };

// Host imports (module "guardrail").

// @ts-ignore: decorator
@external("guardrail", "read_input")
declare function host_read_input(kind: i32, buf: usize, limit: i32): i32;

// @ts-ignore: decorator
@external("guardrail", "write_output")
declare function host_write_output(ptr: usize, len: i32): void;

// @ts-ignore: decorator
@external("guardrail", "log")
declare function host_log(level: i32, ptr: usize, len: i32): void;

export const HOOK_BEFORE_REQUEST = "beforeRequestHook";
export const HOOK_AFTER_RESPONSE = "afterResponseHook";

export const LOG_DEBUG: i32 = -1;
export const LOG_INFO: i32 = 0;
export const LOG_WARN: i32 = 1;
export const LOG_ERROR: i32 = 2;

const KIND_ENVELOPE: i32 = 0;
const KIND_TEXT: i32 = 1;
const KIND_PARAMS: i32 = 2;

// Inputs up to this size are read in one host call.
const scratch = new ArrayBuffer(4096);

function readInput(kind: i32): string {
  const n = host_read_input(kind, changetype<usize>(scratch), scratch.byteLength);
  if (n <= 0) return "";
  if (n <= scratch.byteLength) {
    return String.UTF8.decodeUnsafe(changetype<usize>(scratch), <usize>n);
  }
  const buf = new ArrayBuffer(n);
  let m = host_read_input(kind, changetype<usize>(buf), n);
  if (m < 0 || m > n) m = n;
  return String.UTF8.decodeUnsafe(changetype<usize>(buf), <usize>m);
}

// log sends a message to the gateway log (truncated and rate-limited there).
export function log(level: i32, message: string): void {
  const b = String.UTF8.encode(message);
  host_log(level, changetype<usize>(b), b.byteLength);
}

// Input is one call's input. Each part is read from the host on first use:
// text() and the parameters need no parsing of the (larger) envelope.
export class Input {
  private _text: string | null = null;
  private _params: Value | null = null;
  private _rawEnvelope: string | null = null;
  private _envelope: Value | null = null;
  private _envelopeOK: bool = true;

  // The text under check (message contents joined by "\n"), no JSON parsed.
  text(): string {
    if (this._text == null) this._text = readInput(KIND_TEXT);
    return this._text!;
  }

  // The parameters from the gateway config: an object, empty when none.
  parameters(): Value {
    if (this._params == null) {
      const parsed = parse(readInput(KIND_PARAMS));
      this._params = parsed != null && parsed.isObject ? parsed : Value.object();
    }
    return this._params!;
  }

  paramString(name: string, def: string = ""): string {
    return this.parameters().getString(name, def);
  }

  paramNumber(name: string, def: f64 = 0): f64 {
    return this.parameters().getNumber(name, def);
  }

  paramBool(name: string, def: bool = false): bool {
    return this.parameters().getBool(name, def);
  }

  // An array-of-strings parameter (non-strings skipped); a single string is
  // a list of one; empty when absent.
  paramStrings(name: string): Array<string> {
    const out = new Array<string>();
    const v = this.parameters().get(name);
    if (v == null) return out;
    if (v.isString) {
      out.push(v.str);
    } else if (v.isArray) {
      for (let i = 0; i < v.length; i++) {
        const x = v.items[i];
        if (x.isString) out.push(x.str);
      }
    }
    return out;
  }

  // The envelope JSON (input kind 0) as the host sent it.
  rawEnvelope(): string {
    if (this._rawEnvelope == null) this._rawEnvelope = readInput(KIND_ENVELOPE);
    return this._rawEnvelope!;
  }

  // The parsed envelope (an empty object when it does not parse; see
  // envelopeOK).
  envelope(): Value {
    if (this._envelope == null) {
      const parsed = parse(this.rawEnvelope());
      this._envelopeOK = parsed != null && parsed.isObject;
      this._envelope = this._envelopeOK ? parsed! : Value.object();
    }
    return this._envelope!;
  }

  envelopeOK(): bool {
    this.envelope();
    return this._envelopeOK;
  }

  // "beforeRequestHook" or "afterResponseHook".
  hook(): string {
    return this.envelope().getString("hook");
  }

  // The id of the manifest function the config called.
  functionId(): string {
    return this.envelope().getString("function");
  }

  // The request: {endpoint, provider, model, path, headers, json}.
  request(): Value {
    const r = this.envelope().get("request");
    return r != null ? r : Value.object();
  }

  // The request body, or null when it is not a JSON object.
  requestJSON(): Value | null {
    return this.request().get("json");
  }

  // The answer: {status, headers, json}; null in beforeRequestHook.
  response(): Value | null {
    return this.envelope().get("response");
  }

  // The answer body, or null.
  responseJSON(): Value | null {
    const r = this.response();
    return r != null ? r.get("json") : null;
  }

  metadata(): Value {
    const m = this.envelope().get("metadata");
    return m != null ? m : Value.object();
  }
}

// Output is a check's result.
export class Output {
  // true lets the request through; false fails the check.
  verdict: bool = true;
  // Why, in a few words (optional).
  reason: string = "";
  // Free-form detail shown in hook_results (optional).
  data: Value | null = null;
  // The new request body (beforeRequestHook) or answer body (afterResponseHook).
  transformedRequest: Value | null = null;
  transformedResponse: Value | null = null;
  // When not empty, the call is a plugin error and the rest is ignored.
  error: string = "";

  static pass(data: Value | null = null): Output {
    const o = new Output();
    o.data = data;
    return o;
  }

  static fail(reason: string, data: Value | null = null): Output {
    const o = new Output();
    o.verdict = false;
    o.reason = reason;
    o.data = data;
    return o;
  }

  static error(message: string): Output {
    const o = new Output();
    o.error = message.length > 0 ? message : "error";
    return o;
  }

  // Sets the new body of the side under check; returns this.
  transformed(input: Input, body: Value): Output {
    if (input.hook() == HOOK_AFTER_RESPONSE) this.transformedResponse = body;
    else this.transformedRequest = body;
    return this;
  }

  // The output JSON handed to the host.
  stringify(): string {
    let s = "{\"verdict\":" + (this.verdict ? "true" : "false");
    const data = this.data;
    if (data != null) s += ",\"data\":" + data.stringify();
    if (this.reason.length > 0) s += ",\"reason\":" + quote(this.reason);
    const req = this.transformedRequest;
    const resp = this.transformedResponse;
    if (req != null || resp != null) {
      s += ",\"transformed\":{";
      if (req != null) s += "\"request\":{\"json\":" + req.stringify() + "}";
      if (resp != null) {
        if (req != null) s += ",";
        s += "\"response\":{\"json\":" + resp.stringify() + "}";
      }
      s += "}";
    }
    return s + "}";
  }
}

let handler: ((input: Input) => Output) | null = null;

// handle registers the check that guardrail_check runs. Call it at the top
// level of the entry file. (AssemblyScript functions do not capture
// variables: keep state in globals.)
export function handle(fn: (input: Input) => Output): void {
  handler = fn;
}

// guardrail_abi_v1 marks the module as a guardrail of ABI v1; never called.
export function guardrail_abi_v1(): void {}

// guardrail_check runs the registered check once: 0 when it ran, non-zero
// for a plugin error.
export function guardrail_check(): i32 {
  const fn = handler;
  if (fn == null) {
    log(LOG_ERROR, "guardrail: no check registered (call handle() in the entry file)");
    return 1;
  }
  const out = fn(new Input());
  if (out.error.length > 0) {
    log(LOG_ERROR, "guardrail: " + out.error);
    return 3;
  }
  const b = String.UTF8.encode(out.stringify());
  host_write_output(changetype<usize>(b), b.byteLength);
  return 0;
}
