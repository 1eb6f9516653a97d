//! Property tests for the planner: over arbitrary bytes, Unicode-heavy bodies
//! laced with controls and paste-frame markers, and arbitrary capabilities.

use promptgate::core::error::Error;
use promptgate::core::plan::{plan, sanitise, ChunkKind, Framing, Plan, ARGV_MAX};
use promptgate::core::profile::{Capability, Profiles};
use proptest::prelude::*;
use std::sync::OnceLock;

/// The built-in claude capability (compiled once: profile regexes are slow in debug builds).
fn base() -> Capability {
    static BASE: OnceLock<Capability> = OnceLock::new();
    BASE.get_or_init(|| {
        Profiles::builtin()
            .get("claude")
            .unwrap()
            .capability()
            .clone()
    })
    .clone()
}

fn capability() -> impl Strategy<Value = Capability> {
    (
        any::<bool>(),
        1usize..20_000,
        1usize..5_000,
        any::<bool>(),
        0u64..100,
    )
        .prop_map(|(bracketed, chunk_max, paste_min, newline_ok, pacing)| {
            let mut c = base();
            c.bracketed_paste = bracketed;
            c.raw_chunk_max = chunk_max;
            c.paste_min_bytes = paste_min;
            c.raw_newline_ok = newline_ok;
            c.pacing_ms = pacing;
            c
        })
}

/// Small chunk limits too, so that chunking is exercised on short bodies.
fn small_capability() -> impl Strategy<Value = Capability> {
    (any::<bool>(), 1usize..20, 1usize..200, any::<bool>()).prop_map(
        |(bracketed, chunk_max, paste_min, newline_ok)| {
            let mut c = base();
            c.bracketed_paste = bracketed;
            c.raw_chunk_max = chunk_max;
            c.paste_min_bytes = paste_min;
            c.raw_newline_ok = newline_ok;
            c
        },
    )
}

/// A string of `n` chars drawn from `c`.
fn chars(
    c: impl Strategy<Value = char>,
    n: std::ops::Range<usize>,
) -> impl Strategy<Value = String> {
    prop::collection::vec(c, n).prop_map(String::from_iter)
}

fn piece() -> impl Strategy<Value = String> {
    use prop::char::{range, ranges};
    let cjk = ranges(
        vec![
            '\u{4e00}'..='\u{9fff}',
            '\u{3040}'..='\u{30ff}',
            '\u{ac00}'..='\u{d7a3}',
        ]
        .into(),
    );
    let emoji = ranges(
        vec![
            '\u{1f300}'..='\u{1faff}',
            '\u{2600}'..='\u{27bf}',
            '\u{1f3fb}'..='\u{1f3ff}',
            '\u{200d}'..='\u{200d}',
            '\u{fe0f}'..='\u{fe0f}',
        ]
        .into(),
    );
    let controls = prop_oneof![range('\0', '\x1f'), Just('\x7f'), range('\u{80}', '\u{9f}')];
    prop_oneof![
        4 => chars(any::<char>(), 0..12),
        2 => chars(cjk, 1..6),
        2 => chars(emoji, 1..4),
        2 => chars(controls, 1..3),
        1 => Just("\x1b[201~".to_string()),
        1 => Just("\x1b[200~".to_string()),
        1 => Just("\x1b[20".to_string()),
        1 => Just("0~".to_string()),
        1 => Just("[201~".to_string()),
        1 => Just("\r\n".to_string()),
        1 => Just("\r".to_string()),
        1 => Just("\n".to_string()),
        1 => Just("\t".to_string()),
        1 => Just(";".to_string()),
        1 => Just("-".to_string()),
        1 => Just(" ".to_string()),
    ]
}

fn unicode_body() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(piece(), 0..40).prop_map(|v| v.concat().into_bytes())
}

fn any_body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..300),
        unicode_body(),
        unicode_body(),
    ]
}

/// Every property, for one input.
fn check(raw: &[u8], cap: &Capability) -> Result<(), TestCaseError> {
    let p: Plan = match plan(raw, cap) {
        Ok(p) => p,
        Err(Error::BadBody(_)) => {
            // A refusal is a BadBody, and it is consistent with sanitise: either
            // sanitise refuses too, or it is a multi-line body with no way to type it.
            match sanitise(raw) {
                Err(Error::BadBody(_)) => {}
                Ok((body, _)) => {
                    prop_assert!(body.contains('\n'));
                    prop_assert!(!cap.bracketed_paste && !cap.raw_newline_ok);
                }
                Err(e) => prop_assert!(false, "sanitise: unexpected error {e:?}"),
            }
            return Ok(());
        }
        Err(e) => return Err(TestCaseError::fail(format!("unexpected error {e:?}"))),
    };
    let (body, changes) = sanitise(raw).expect("plan succeeded, so sanitise does");

    // (2) the body is sanitise's (plus one space after a last `\` where `\` +
    // Enter is a new line, named as a change of its own), and clean.
    let spaced = cap.backslash_enter_newline && body.ends_with('\\');
    let body = if spaced { format!("{body} ") } else { body };
    prop_assert_eq!(&p.body, &body);
    prop_assert_eq!(&p.changes[..changes.len()], &changes[..]);
    prop_assert_eq!(p.changes.len(), changes.len() + spaced as usize);
    prop_assert_eq!(p.bytes_in, raw.len());
    prop_assert_eq!(p.bytes_out, p.body.len());
    prop_assert!(!p.body.trim().is_empty());
    for c in p.body.chars() {
        prop_assert!(
            c == '\t' || c == '\n' || !(c.is_ascii_control() || ('\u{80}'..='\u{9f}').contains(&c)),
            "control char {:?} left in body",
            c
        );
    }
    prop_assert!(!p.body.contains('\x1b'));
    prop_assert!(!p.body.contains('\r'));
    prop_assert!(!p.body.contains("\x1b[200~") && !p.body.contains("\x1b[201~"));
    prop_assert!(!p.body.ends_with('\n'));
    prop_assert_eq!(p.changes.is_empty(), raw == p.body.as_bytes());

    // (6) sanitise is idempotent.
    let (again, more) = sanitise(p.body.as_bytes()).expect("a clean body sanitises");
    prop_assert_eq!(&again, &p.body);
    prop_assert!(more.is_empty(), "second pass changed {:?}", more);

    // (5) exactly one submit chunk, last, with the key and the delay.
    let n = p.chunks.len();
    prop_assert!(n >= 2);
    prop_assert_eq!(
        p.chunks
            .iter()
            .filter(|c| c.how == ChunkKind::Submit)
            .count(),
        1
    );
    let submit = &p.chunks[n - 1];
    prop_assert_eq!(submit.how, ChunkKind::Submit);
    prop_assert_eq!(&submit.text, &cap.submit_key);
    prop_assert_eq!(
        submit.delay_before_ms,
        promptgate::core::plan::submit_delay_ms(
            p.body.len(),
            p.framing == Framing::BracketedPaste,
            cap
        )
    );
    let body_chunks = &p.chunks[..n - 1];

    // (1) the body chunks concatenate to the body; (4) none is empty and each
    // starts on a char boundary of the body.
    let mut at = 0;
    for c in body_chunks {
        prop_assert!(!c.text.is_empty());
        prop_assert!(p.body.is_char_boundary(at));
        prop_assert_eq!(&p.body[at..at + c.text.len()], c.text.as_str());
        at += c.text.len();
    }
    prop_assert_eq!(at, p.body.len());

    // Framing.
    let multi_line = p.body.contains('\n');
    let should_paste = cap.bracketed_paste && (multi_line || p.body.len() >= cap.paste_min_bytes);
    if should_paste {
        // (7) a paste is exactly one chunk.
        prop_assert_eq!(p.framing, Framing::BracketedPaste);
        prop_assert_eq!(body_chunks.len(), 1);
        prop_assert_eq!(body_chunks[0].how, ChunkKind::Paste);
        prop_assert_eq!(body_chunks[0].delay_before_ms, 0);
    } else {
        prop_assert_eq!(p.framing, Framing::RawKeys);
        prop_assert!(!multi_line || cap.raw_newline_ok);
        // (3) every Keys chunk fits, unless it is one char.
        let limit = cap.raw_chunk_max.min(ARGV_MAX);
        for (i, c) in body_chunks.iter().enumerate() {
            prop_assert_eq!(c.how, ChunkKind::Keys);
            prop_assert!(
                c.text.len() <= limit || c.text.chars().count() == 1,
                "chunk of {} bytes over limit {}",
                c.text.len(),
                limit
            );
            let delay = if i == 0 { 0 } else { cap.pacing_ms };
            prop_assert_eq!(c.delay_before_ms, delay);
        }
        // Greedy: a chunk is only cut when the next char would not fit.
        for w in body_chunks.windows(2) {
            let next = w[1].text.chars().next().unwrap();
            prop_assert!(w[0].text.len() + next.len_utf8() > limit);
        }
    }
    Ok(())
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn plan_properties(raw in any_body(), cap in capability()) {
        check(&raw, &cap)?;
    }

    #[test]
    fn plan_properties_small_chunks(raw in unicode_body(), cap in small_capability()) {
        check(&raw, &cap)?;
    }

    #[test]
    fn sanitise_is_idempotent(raw in any_body()) {
        if let Ok((body, _)) = sanitise(&raw) {
            let (again, changes) = sanitise(body.as_bytes()).unwrap();
            prop_assert_eq!(again, body);
            prop_assert!(changes.is_empty());
        }
    }

    #[test]
    fn valid_utf8_without_controls_is_untouched(
        head in chars(any::<char>().prop_filter("control", |c| !c.is_control()), 0..40),
        // (a body of only invisible characters is empty: refused, see `invisible`)
        last in any::<char>().prop_filter("control, space or invisible", |c| {
            !c.is_control() && !c.is_whitespace() && !promptgate::core::plan::invisible(*c)
        }),
    ) {
        let s = format!("{head}{last}");
        let (body, changes) = sanitise(s.as_bytes()).unwrap();
        prop_assert_eq!(body, s);
        prop_assert!(changes.is_empty());
    }

    #[test]
    fn multi_line_with_bracketed_paste_is_one_paste(
        a in chars(any::<char>(), 0..30), b in chars(any::<char>(), 0..30), cap in capability()
    ) {
        let mut cap = cap;
        cap.bracketed_paste = true;
        let raw = format!("{a}a\n{b}x");
        let p = plan(raw.as_bytes(), &cap).unwrap();
        prop_assert_eq!(p.framing, Framing::BracketedPaste);
        prop_assert_eq!(p.chunks.len(), 2);
        prop_assert_eq!(p.chunks[0].how, ChunkKind::Paste);
        prop_assert_eq!(&p.chunks[0].text, &p.body);
    }
}
