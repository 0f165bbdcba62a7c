//! prompt-length: fails when the text under check is longer than
//! `maxChars` characters or `maxTokens` estimated tokens (ceil(chars / 4)).
//! Data: {"chars": n, "tokens": n}. Reads only the text and the parameters
//! (no JSON envelope is parsed).

use guardrail::{Input, Json, Output};

/// The token estimate: a quarter of the characters, rounded up.
fn estimate_tokens(chars: u64) -> u64 {
    (chars + 3) / 4
}

fn check(mut input: Input) -> Output {
    let max_chars = input.param_f64("maxChars");
    let max_tokens = input.param_f64("maxTokens");
    for (name, v) in [("maxChars", max_chars), ("maxTokens", max_tokens)] {
        if let Some(n) = v {
            if !(n >= 0.0) {
                return Output::error(format!("{}: must be a number >= 0", name));
            }
        }
    }
    let chars = input.text().chars().count() as u64;
    let tokens = estimate_tokens(chars);
    let data = Json::object().set("chars", chars.into()).set("tokens", tokens.into());
    let mut over = Vec::new();
    if let Some(m) = max_chars {
        if chars as f64 > m {
            over.push(format!("{} characters > maxChars {}", chars, m));
        }
    }
    if let Some(m) = max_tokens {
        if tokens as f64 > m {
            over.push(format!("about {} tokens > maxTokens {}", tokens, m));
        }
    }
    if over.is_empty() {
        Output::pass().with_data(data)
    } else {
        Output::fail(format!("prompt too long: {}", over.join(", ")), Some(data))
    }
}

guardrail::register!(check);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        let env = r#"{"parameters":{"maxChars":10,"maxTokens":2}}"#;
        let out = check(Input::from_parts(env, "héllo"));
        assert_eq!(out.stringify(), r#"{"verdict":true,"data":{"chars":5,"tokens":2}}"#);
        let out = check(Input::from_parts(env, "123456789"));
        assert!(!out.verdict);
        assert_eq!(out.data.unwrap().stringify(), r#"{"chars":9,"tokens":3}"#);
        let out = check(Input::from_parts(r#"{"parameters":{}}"#, &"x".repeat(1000)));
        assert!(out.verdict);
        let out = check(Input::from_parts(r#"{"parameters":{"maxChars":-1}}"#, ""));
        assert!(out.error.is_some());
    }
}
