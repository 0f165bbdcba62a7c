//! Rust guest kit for the gateway's WebAssembly guardrails, ABI v1. No
//! dependencies; builds with Rust 1.63 or later for
//! `wasm32-unknown-unknown`.
//!
//! ```ignore
//! use guardrail::{Input, Json, Output};
//!
//! fn check(mut input: Input) -> Output {
//!     if input.text().is_empty() {
//!         return Output::fail("empty text", None);
//!     }
//!     Output::pass()
//! }
//!
//! guardrail::register!(check);
//! ```
//!
//! `register!` defines the exports `guardrail_abi_v1` and `guardrail_check`
//! in the crate that uses it. Build the check as a `cdylib` with a 64 KiB
//! stack: `-C link-arg=-zstack-size=65536`.
//!
//! [`Input`] is lazy: [`Input::text`] reads the plain text under check
//! without parsing any JSON, [`Input::parameters`] reads only the
//! parameters, and the envelope (with the request and answer bodies) is
//! read and parsed the first time it is asked for.

mod json;

pub use json::{quote, quote_into, Json};

/// The hook before the request goes to the provider.
pub const BEFORE_REQUEST: &str = "beforeRequestHook";
/// The hook after the answer comes back.
pub const AFTER_RESPONSE: &str = "afterResponseHook";

/// Log levels of the host's `log`.
pub const LOG_DEBUG: i32 = -1;
pub const LOG_INFO: i32 = 0;
pub const LOG_WARN: i32 = 1;
pub const LOG_ERROR: i32 = 2;

const KIND_ENVELOPE: i32 = 0;
const KIND_TEXT: i32 = 1;
const KIND_PARAMS: i32 = 2;

#[cfg(target_arch = "wasm32")]
mod host {
    #[link(wasm_import_module = "guardrail")]
    extern "C" {
        pub fn read_input(kind: i32, buf: *mut u8, limit: i32) -> i32;
        pub fn write_output(ptr: *const u8, len: i32);
        pub fn log(level: i32, ptr: *const u8, len: i32);
    }
}

// Off wasm32 (unit tests of a check on the developer's machine) there is no
// host: Input is built with Input::from_parts and logs go to stderr.
#[cfg(not(target_arch = "wasm32"))]
mod host {
    pub unsafe fn read_input(_kind: i32, _buf: *mut u8, _limit: i32) -> i32 {
        0
    }
    pub unsafe fn write_output(_ptr: *const u8, _len: i32) {}
    pub unsafe fn log(level: i32, ptr: *const u8, len: i32) {
        let b = std::slice::from_raw_parts(ptr, len as usize);
        eprintln!("guardrail [{}]: {}", level, String::from_utf8_lossy(b));
    }
}

fn read_input(kind: i32) -> String {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    // SAFETY: the host writes at most `limit` bytes at `buf`.
    let n = unsafe { host::read_input(kind, buf.as_mut_ptr(), buf.capacity() as i32) };
    if n <= 0 {
        return String::new();
    }
    let mut n = n as usize;
    if n > buf.capacity() {
        buf.reserve_exact(n);
        let m = unsafe { host::read_input(kind, buf.as_mut_ptr(), n as i32) };
        if m >= 0 && (m as usize) < n {
            n = m as usize;
        }
    }
    unsafe { buf.set_len(n) };
    match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Sends a message to the gateway log (truncated and rate-limited there).
pub fn log(level: i32, message: &str) {
    unsafe { host::log(level, message.as_ptr(), message.len() as i32) }
}

/// One call's input. Each part is read from the host on first use.
#[derive(Default)]
pub struct Input {
    text: Option<String>,
    params: Option<Json>,
    raw_envelope: Option<String>,
    envelope: Option<Json>,
    envelope_ok: bool,
}

impl Input {
    /// An input read from the host (what `register!` passes to the check).
    pub fn from_host() -> Input {
        Input::default()
    }

    /// An input from an envelope and a text, for unit tests of a check off
    /// wasm; the parameters are the envelope's.
    pub fn from_parts(envelope: &str, text: &str) -> Input {
        let mut in_ = Input { text: Some(text.to_string()), raw_envelope: Some(envelope.to_string()), ..Input::default() };
        let params = in_.envelope().get("parameters").cloned().unwrap_or_else(Json::object);
        in_.params = Some(params);
        in_
    }

    /// The text under check (message contents joined by "\n"); no JSON is
    /// parsed.
    pub fn text(&mut self) -> &str {
        if self.text.is_none() {
            self.text = Some(read_input(KIND_TEXT));
        }
        self.text.as_deref().unwrap_or("")
    }

    /// The parameters from the gateway config: an object, empty when none.
    pub fn parameters(&mut self) -> &Json {
        if self.params.is_none() {
            let p = match Json::parse(&read_input(KIND_PARAMS)) {
                Some(v @ Json::Object(_)) => v,
                _ => Json::object(),
            };
            self.params = Some(p);
        }
        self.params.as_ref().unwrap()
    }

    /// A parameter, if set and not null.
    pub fn param(&mut self, name: &str) -> Option<&Json> {
        self.parameters().get(name).filter(|v| !v.is_null())
    }

    /// A numeric parameter.
    pub fn param_f64(&mut self, name: &str) -> Option<f64> {
        self.param(name).and_then(Json::as_f64)
    }

    /// A string parameter.
    pub fn param_str(&mut self, name: &str) -> Option<String> {
        self.param(name).and_then(Json::as_str).map(str::to_string)
    }

    /// A boolean parameter.
    pub fn param_bool(&mut self, name: &str) -> Option<bool> {
        self.param(name).and_then(Json::as_bool)
    }

    /// An array-of-strings parameter (non-strings skipped); a single string
    /// is a list of one; empty when absent.
    pub fn param_strings(&mut self, name: &str) -> Vec<String> {
        match self.param(name) {
            Some(Json::String(s)) => vec![s.clone()],
            Some(Json::Array(items)) => items.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        }
    }

    /// The envelope JSON (input kind 0) as the host sent it.
    pub fn raw_envelope(&mut self) -> &str {
        if self.raw_envelope.is_none() {
            self.raw_envelope = Some(read_input(KIND_ENVELOPE));
        }
        self.raw_envelope.as_deref().unwrap_or("")
    }

    /// The parsed envelope; an empty object when it does not parse (see
    /// [`Input::envelope_ok`]).
    pub fn envelope(&mut self) -> &mut Json {
        if self.envelope.is_none() {
            let parsed = Json::parse(self.raw_envelope());
            self.envelope_ok = matches!(parsed, Some(Json::Object(_)));
            self.envelope = Some(if self.envelope_ok { parsed.unwrap() } else { Json::object() });
        }
        self.envelope.as_mut().unwrap()
    }

    /// Whether the envelope parsed.
    pub fn envelope_ok(&mut self) -> bool {
        self.envelope();
        self.envelope_ok
    }

    /// [`BEFORE_REQUEST`] or [`AFTER_RESPONSE`].
    pub fn hook(&mut self) -> String {
        self.envelope().get("hook").and_then(Json::as_str).unwrap_or("").to_string()
    }

    /// The id of the manifest function the config called.
    pub fn function(&mut self) -> String {
        self.envelope().get("function").and_then(Json::as_str).unwrap_or("").to_string()
    }

    /// The request: {endpoint, provider, model, path, headers, json}.
    pub fn request(&mut self) -> Option<&Json> {
        self.envelope().get("request")
    }

    /// The request body, if it is a JSON object; mutable, so a check can
    /// change it and return it with [`Output::transformed`].
    pub fn request_json(&mut self) -> Option<&mut Json> {
        self.envelope().get_mut("request").and_then(|r| r.get_mut("json")).filter(|j| matches!(j, Json::Object(_)))
    }

    /// The answer: {status, headers, json}; None in beforeRequestHook.
    pub fn response(&mut self) -> Option<&Json> {
        self.envelope().get("response")
    }

    /// The answer body, if it is a JSON object.
    pub fn response_json(&mut self) -> Option<&mut Json> {
        self.envelope().get_mut("response").and_then(|r| r.get_mut("json")).filter(|j| matches!(j, Json::Object(_)))
    }

    /// The request's metadata (trace_id and the caller's own keys).
    pub fn metadata(&mut self) -> Option<&Json> {
        self.envelope().get("metadata")
    }
}

/// A check's result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Output {
    /// true lets the request through; false fails the check.
    pub verdict: bool,
    /// Free-form detail shown in hook_results.
    pub data: Option<Json>,
    /// Why, in a few words.
    pub reason: Option<String>,
    /// The new request body (beforeRequestHook).
    pub transformed_request: Option<Json>,
    /// The new answer body (afterResponseHook).
    pub transformed_response: Option<Json>,
    /// When set, the call is a plugin error and the rest is ignored.
    pub error: Option<String>,
}

impl Output {
    /// A passing result.
    pub fn pass() -> Output {
        Output { verdict: true, ..Output::default() }
    }

    /// A failing result with a reason and data.
    pub fn fail<S: Into<String>>(reason: S, data: Option<Json>) -> Output {
        Output { verdict: false, reason: Some(reason.into()), data, ..Output::default() }
    }

    /// A plugin error.
    pub fn error<S: Into<String>>(message: S) -> Output {
        Output { error: Some(message.into()), ..Output::default() }
    }

    /// Sets data; returns self, to chain.
    pub fn with_data(mut self, data: Json) -> Output {
        self.data = Some(data);
        self
    }

    /// Sets the new body of the side under check (request in
    /// beforeRequestHook, answer in afterResponseHook).
    pub fn transformed(mut self, input: &mut Input, body: Json) -> Output {
        if input.hook() == AFTER_RESPONSE {
            self.transformed_response = Some(body);
        } else {
            self.transformed_request = Some(body);
        }
        self
    }

    /// The output JSON handed to the host.
    pub fn stringify(&self) -> String {
        let mut s = String::from(if self.verdict { "{\"verdict\":true" } else { "{\"verdict\":false" });
        if let Some(d) = &self.data {
            s.push_str(",\"data\":");
            s.push_str(&d.stringify());
        }
        if let Some(r) = &self.reason {
            s.push_str(",\"reason\":");
            quote_into(r, &mut s);
        }
        if self.transformed_request.is_some() || self.transformed_response.is_some() {
            s.push_str(",\"transformed\":{");
            if let Some(b) = &self.transformed_request {
                s.push_str("\"request\":{\"json\":");
                s.push_str(&b.stringify());
                s.push('}');
            }
            if let Some(b) = &self.transformed_response {
                if self.transformed_request.is_some() {
                    s.push(',');
                }
                s.push_str("\"response\":{\"json\":");
                s.push_str(&b.stringify());
                s.push('}');
            }
            s.push('}');
        }
        s.push('}');
        s
    }
}

/// Runs a check on the host's input and writes its output: the body of the
/// `guardrail_check` export that [`register!`] defines. Returns 0 when the
/// check ran, non-zero for a plugin error.
pub fn run(check: fn(Input) -> Output) -> i32 {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        // A panic traps the instance (the host discards it and reports a
        // plugin error); log its message first.
        std::panic::set_hook(Box::new(|info| log(LOG_ERROR, &format!("guardrail: check panicked: {}", info))));
    });
    let out = check(Input::from_host());
    if let Some(e) = &out.error {
        log(LOG_ERROR, &format!("guardrail: {}", e));
        return 3;
    }
    let s = out.stringify();
    unsafe { host::write_output(s.as_ptr(), s.len() as i32) };
    0
}

/// Registers the check: defines the `guardrail_abi_v1` and
/// `guardrail_check` exports. Use it once, at the top level of the cdylib.
#[macro_export]
macro_rules! register {
    ($check:path) => {
        /// Marks the module as a guardrail of ABI v1; never called.
        #[no_mangle]
        pub extern "C" fn guardrail_abi_v1() {}

        /// Runs the check once (0 = ran, non-zero = plugin error).
        #[no_mangle]
        pub extern "C" fn guardrail_check() -> i32 {
            $crate::run($check)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_and_output() {
        let env = r#"{"hook":"afterResponseHook","function":"f","parameters":{"n":3,"w":["a",1,"b"],"s":"x"},
            "response":{"status":200,"json":{"choices":[]}}}"#;
        let mut input = Input::from_parts(env, "hello");
        assert_eq!(input.text(), "hello");
        assert_eq!(input.param_f64("n"), Some(3.0));
        assert_eq!(input.param_strings("w"), vec!["a", "b"]);
        assert_eq!(input.param_str("s").as_deref(), Some("x"));
        assert_eq!(input.hook(), AFTER_RESPONSE);
        assert_eq!(input.function(), "f");
        let body = input.response_json().unwrap().clone().set("x", Json::Bool(true));
        let out = Output::fail("a \"b\"", Some(Json::object().set("n", 2u64.into()))).transformed(&mut input, body);
        assert_eq!(
            out.stringify(),
            r#"{"verdict":false,"data":{"n":2},"reason":"a \"b\"","transformed":{"response":{"json":{"choices":[],"x":true}}}}"#
        );
        assert_eq!(Output::pass().stringify(), r#"{"verdict":true}"#);
    }
}
