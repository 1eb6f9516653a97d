//! `promptgate mcp` answers every line (issue 23): random bytes, JSON-ish
//! noise and mutations of good requests each get exactly one answer (none for
//! a blank line or a well-formed notification), an error answer carries the
//! request's id when it can be read, and the server still answers a good
//! request after each. No tmux server is needed: the socket named is never
//! started, and nothing can be typed.

use promptgate::io::jsonrpc::{check, Line};
use proptest::prelude::*;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Mutex;
use std::time::Duration;

struct Server {
    child: Child,
    stdin: ChildStdin,
    answers: Receiver<Value>,
    next_id: i64,
}

impl Server {
    fn start() -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_promptgate"))
            .args([
                "-L",
                &format!("promptgate-test-nonexistent-{}", std::process::id()),
                "mcp",
            ])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, answers) = channel();
        std::thread::spawn(move || {
            for l in out.split(b'\n') {
                let Ok(l) = l else { break };
                let v = serde_json::from_slice(&l)
                    .unwrap_or_else(|e| panic!("not JSON from the server: {e}: {l:?}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        let mut s = Server {
            child,
            stdin,
            answers,
            next_id: 1_000_000,
        };
        s.write(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#);
        let init = s.next().expect("initialize answered");
        assert!(init["result"].is_object(), "{init}");
        s.write(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        s
    }

    fn write(&mut self, line: &[u8]) {
        self.stdin.write_all(line).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next answer; `None` if none comes for a long while (a hang).
    fn next(&mut self) -> Option<Value> {
        self.answers.recv_timeout(Duration::from_secs(20)).ok()
    }

    /// Write `line`, then a ping; the answers that came before the ping's.
    fn around(&mut self, line: &[u8], want: usize) -> Vec<Value> {
        self.write(line);
        self.next_id += 1;
        let ping = self.next_id;
        self.write(
            json!({"jsonrpc": "2.0", "id": ping, "method": "ping"})
                .to_string()
                .as_bytes(),
        );
        let mut got = Vec::new();
        let mut pinged = false;
        while !pinged || got.len() < want {
            let v = self.next().unwrap_or_else(|| {
                panic!("no answer (hang) after {:?}", String::from_utf8_lossy(line))
            });
            if v["id"] == ping && v.get("result").is_some() {
                pinged = true;
            } else {
                got.push(v);
            }
        }
        got
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How many answers a line gets: none for a blank line or a notification.
fn answers_due(line: &[u8]) -> usize {
    match check(line) {
        Line::Skip => 0,
        Line::Answer(_) => 1,
        Line::Pass => {
            let v: Value = serde_json::from_slice(line).unwrap();
            // a request is answered; a notification or a response of the client's is not
            usize::from(v.get("id").is_some() && v.get("method").is_some())
        }
    }
}

fn server() -> &'static Mutex<Server> {
    static S: std::sync::OnceLock<Mutex<Server>> = std::sync::OnceLock::new();
    S.get_or_init(|| Mutex::new(Server::start()))
}

fn one_line(line: Vec<u8>) {
    let mut line = line;
    line.retain(|b| *b != b'\n');
    let want = answers_due(&line);
    let mut s = server().lock().unwrap_or_else(|p| p.into_inner());
    let got = s.around(&line, want);
    assert_eq!(
        got.len(),
        want,
        "{:?}: {got:?}",
        String::from_utf8_lossy(&line)
    );
    for v in &got {
        assert_eq!(v["jsonrpc"], "2.0", "{v}");
        assert!(
            v.get("result").is_some() || v["error"]["code"].is_i64(),
            "{v}"
        );
    }
}

const GOOD: &[&str] = &[
    r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    r#"{"jsonrpc":"2.0","id":"s","method":"tools/list","params":{}}"#,
    r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"agent_state","arguments":{"target":"%1"}}}"#,
];

/// The hostile cases named in the issue, each answered with its id.
#[test]
fn the_named_cases_are_answered() {
    for (line, code, id) in [
        (&b"not json"[..], -32700, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":5,"method":"tools/li"#,
            -32700,
            json!(5),
        ),
        (
            br#"{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":1e400}}"#,
            -32700,
            json!(6),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\x00\"}",
            -32700,
            json!(9),
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"\xff\"}",
            -32700,
            json!(10),
        ),
        (br#"{"jsonrpc":"2.0","id":11}"#, -32600, json!(11)),
        (br#"{"id":12,"method":"ping"}"#, -32600, json!(12)),
    ] {
        let mut s = server().lock().unwrap_or_else(|p| p.into_inner());
        let got = s.around(line, 1);
        assert_eq!(got[0]["error"]["code"], code, "{got:?}");
        assert_eq!(got[0]["id"], id, "{got:?}");
    }
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":13,"method":"ping","params":{{"a":{}}}}}"#,
        "[".repeat(100_000)
    );
    let mut s = server().lock().unwrap_or_else(|p| p.into_inner());
    let got = s.around(deep.as_bytes(), 1);
    assert_eq!(
        (got[0]["error"]["code"].as_i64(), &got[0]["id"]),
        (Some(-32700), &json!(13))
    );
}

fn mutated() -> impl Strategy<Value = Vec<u8>> {
    (
        0..GOOD.len(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(g, edits, cut, truncate)| {
            let mut b = GOOD[g].as_bytes().to_vec();
            for (at, byte) in edits {
                let i = at.index(b.len());
                b[i] = byte;
            }
            if truncate {
                b.truncate(cut.index(b.len() + 1));
            }
            b
        })
}

fn jsonish() -> impl Strategy<Value = Vec<u8>> {
    let alphabet: Vec<u8> = b"{}[]\":,0123456789eE.-+ tfnulrsaidjpcm\\\x00\x01\xff".to_vec();
    prop::collection::vec(prop::sample::select(alphabet), 0..120)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn every_line_gets_one_answer_and_the_server_keeps_serving(
        line in prop_oneof![
            prop::collection::vec(any::<u8>(), 0..200),
            jsonish(),
            mutated(),
        ]
    ) {
        one_line(line);
    }
}
