//! The MCP server's line filter: every line a client writes gets an answer.
//!
//! rmcp's stdio transport drops a line that is not JSON (not UTF-8, truncated,
//! a number out of range such as `1e400`, nested past serde_json's limit, a NUL
//! byte), drops an oversized one, and answers a JSON value of the wrong shape
//! with an error that has no `id`: the client that sent it waits forever. So
//! each line is checked first ([`check`]): what rmcp would not answer is
//! answered here, with `-32700` (parse error) or `-32600` (invalid request) and
//! the request's `id` whenever it can be read; only the rest goes on to rmcp.

use serde_json::{json, Map, Value};

/// The longest line passed on (rmcp's own limit); a longer one is answered here.
pub const MAX_LINE: usize = 16 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;

/// A JSON-RPC error answer.
pub fn error(code: i64, message: &str, id: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// What to do with one line (its `\n` and a trailing `\r` removed).
#[derive(Debug, PartialEq)]
pub enum Line {
    /// A blank line: no message, no answer.
    Skip,
    /// A message rmcp understands: pass it on.
    Pass,
    /// Answer this instead of passing the line on.
    Answer(Value),
}

/// A valid JSON-RPC id: a string or an integer.
fn valid_id(v: &Value) -> bool {
    v.is_string() || v.as_i64().is_some() || v.as_u64().is_some()
}

/// The top-level `"id"` of a line that did not parse, when exactly one id-like
/// member is there to read; else null.
fn salvage_id(text: &str) -> Value {
    let mut found = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("\"id\"") {
        let mut j = i + at + 4;
        i = j;
        while j < b.len() && (b[j] as char).is_ascii_whitespace() {
            j += 1;
        }
        if j >= b.len() || b[j] != b':' {
            continue;
        }
        j += 1;
        while j < b.len() && (b[j] as char).is_ascii_whitespace() {
            j += 1;
        }
        let rest = &text[j..];
        let end = if rest.starts_with('"') {
            // a string: up to its closing quote
            let mut k = 1;
            let rb = rest.as_bytes();
            let mut close = None;
            while k < rb.len() {
                match rb[k] {
                    b'\\' => k += 2,
                    b'"' => {
                        close = Some(k + 1);
                        break;
                    }
                    _ => k += 1,
                }
            }
            close
        } else {
            let n = rest
                .bytes()
                .take_while(|c| c.is_ascii_digit() || *c == b'-')
                .count();
            (n > 0).then_some(n)
        };
        if let Some(end) = end {
            if let Ok(v) = serde_json::from_str::<Value>(&rest[..end]) {
                if valid_id(&v) {
                    found.push(v);
                }
            }
        }
    }
    match found.len() {
        1 => found.pop().unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// Check one line a client wrote.
pub fn check(line: &[u8]) -> Line {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Line::Skip;
    }
    if line.len() > MAX_LINE {
        return check_oversized(line, line.len());
    }
    let Ok(text) = std::str::from_utf8(line) else {
        let lossy = String::from_utf8_lossy(line).into_owned();
        return Line::Answer(error(
            PARSE_ERROR,
            "Parse error: the line is not UTF-8",
            salvage_id(&lossy),
        ));
    };
    let v: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Line::Answer(error(
                PARSE_ERROR,
                &format!("Parse error: {e}"),
                salvage_id(text),
            ))
        }
    };
    let Value::Object(o) = &v else {
        return Line::Answer(error(
            INVALID_REQUEST,
            "Invalid Request: a message is one JSON object (batches are not supported)",
            Value::Null,
        ));
    };
    let id = o.get("id").filter(|i| valid_id(i)).cloned();
    let invalid = |why: &str| {
        Line::Answer(error(
            INVALID_REQUEST,
            &format!("Invalid Request: {why}"),
            id.clone().unwrap_or(Value::Null),
        ))
    };
    if let Some(why) = shape(o) {
        return invalid(&why);
    }
    if let Err(e) = serde_json::from_value::<rmcp::model::ClientJsonRpcMessage>(v.clone()) {
        // a notification is never answered; rmcp ignores the ones it does not know
        if !o.contains_key("id") {
            return Line::Pass;
        }
        return invalid(&e.to_string());
    }
    Line::Pass
}

/// A line longer than [`MAX_LINE`] (`len` bytes; `head`: its first part).
pub fn check_oversized(head: &[u8], len: usize) -> Line {
    let head = String::from_utf8_lossy(&head[..head.len().min(4096)]).into_owned();
    Line::Answer(error(
        INVALID_REQUEST,
        &format!("Invalid Request: a line of {len} bytes is longer than {MAX_LINE}"),
        salvage_id(&head),
    ))
}

/// What is wrong with a message's JSON-RPC 2.0 shape, if anything.
fn shape(o: &Map<String, Value>) -> Option<String> {
    if o.get("jsonrpc") != Some(&json!("2.0")) {
        return Some("\"jsonrpc\" must be \"2.0\"".into());
    }
    if let Some(i) = o.get("id") {
        if !valid_id(i) {
            return Some(format!("\"id\" must be a string or an integer, not {i}"));
        }
    }
    match o.get("method") {
        Some(Value::String(_)) => match o.get("params") {
            None | Some(Value::Object(_)) | Some(Value::Array(_)) => None,
            Some(p) => Some(format!("\"params\" must be an object or an array, not {p}")),
        },
        Some(m) => Some(format!("\"method\" must be a string, not {m}")),
        // a response to a request of the server's
        None if !o.contains_key("id") => Some("no \"method\" and no \"id\"".into()),
        None if o.contains_key("result") == o.contains_key("error") => {
            Some("a response holds one of \"result\" and \"error\"".into())
        }
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(line: &str) -> Value {
        match check(line.as_bytes()) {
            Line::Answer(v) => v,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn malformed_lines_are_answered_with_their_id_when_it_can_be_read() {
        for (line, code, id) in [
            ("not json", PARSE_ERROR, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":5,"method":"tools/li"#,
                PARSE_ERROR,
                json!(5),
            ),
            (
                r#"{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":1e400}}"#,
                PARSE_ERROR,
                json!(6),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"a\"b","method":"#,
                PARSE_ERROR,
                json!("a\"b"),
            ),
            (
                "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"p\u{0}\"}",
                PARSE_ERROR,
                json!(9),
            ),
            (r#"{"jsonrpc":"2.0","id":7}"#, INVALID_REQUEST, json!(7)),
            (r#"{"id":8,"method":"ping"}"#, INVALID_REQUEST, json!(8)),
            ("[]", INVALID_REQUEST, Value::Null),
            ("42", INVALID_REQUEST, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":7}"#,
                INVALID_REQUEST,
                json!(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":1}"#,
                INVALID_REQUEST,
                json!(3),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
        ] {
            let v = answer(line);
            assert_eq!(v["error"]["code"], code, "{line}: {v}");
            assert_eq!(v["id"], id, "{line}: {v}");
        }
        let deep = format!(r#"{{"jsonrpc":"2.0","id":2,"params":{}"#, "[".repeat(5000));
        assert_eq!(answer(&deep)["error"]["code"], PARSE_ERROR);
        assert_eq!(answer(&deep)["id"], 2);
        match check(b"{\"id\":1,\xff\xfe}") {
            Line::Answer(v) => assert_eq!(
                (v["error"]["code"].as_i64(), &v["id"]),
                (Some(PARSE_ERROR), &json!(1))
            ),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn good_messages_and_blank_lines_pass() {
        assert_eq!(check(b""), Line::Skip);
        assert_eq!(check(b"  \t"), Line::Skip);
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/list","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_agents","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
            // rmcp answers these itself (-32601, -32602, a tool error)
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":5}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"nosuch"}"#,
        ] {
            assert_eq!(check(line.as_bytes()), Line::Pass, "{line}");
        }
    }
}
