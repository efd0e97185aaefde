//! `\uXXXX` escapes inside JSON strings, read without parsing the document.
//!
//! Two kinds matter beyond plain JSON. A lone UTF-16 surrogate (`"\ud800"`):
//! Python's `json.dumps` writes one for a string holding it, SQLite stores
//! it, but it names no Unicode scalar value, so serde refuses it in a Rust
//! `String` and Postgres jsonb refuses it altogether. And `\u0000`, which
//! Postgres text and jsonb cannot hold. Stored text keeps them as they are;
//! a decoded view replaces each lone surrogate with U+FFFD, the one sensible
//! meaning it has in Rust.

use std::borrow::Cow;

/// One `\uXXXX` escape inside a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Escape {
    /// Byte offset of the backslash.
    pub(crate) at: usize,
    /// The UTF-16 code unit it spells (the high one of a pair).
    pub(crate) unit: u16,
    /// A surrogate with no partner.
    pub(crate) lone: bool,
    /// Bytes it covers: 6, or 12 for a surrogate pair.
    pub(crate) len: usize,
}

/// Every `\uXXXX` escape inside the strings of `text`, in order.
pub(crate) fn escapes(text: &str) -> impl Iterator<Item = Escape> + '_ {
    let bytes = text.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    // A document without `\u` has no escape to find: the common case.
    let mut done = !text.contains("\\u");
    std::iter::from_fn(move || {
        while !done && i < bytes.len() {
            match bytes[i] {
                b'"' => in_string = !in_string,
                b'\\' if in_string => {
                    if let Some(unit) = hex_escape(bytes, i) {
                        let paired = is_high(unit) && hex_escape(bytes, i + 6).is_some_and(is_low);
                        let len = if paired { 12 } else { 6 };
                        let escape = Escape { at: i, unit, lone: !paired && (is_high(unit) || is_low(unit)), len };
                        i += len;
                        return Some(escape);
                    }
                    // Any other escape is two bytes; skipping the second
                    // keeps an escaped quote from ending the string.
                    i += 1;
                }
                _ => {}
            }
            i += 1;
        }
        done = true;
        None
    })
}

/// `text` with every lone surrogate escape replaced by `\ufffd`; borrowed
/// when there is none (the common case).
pub(crate) fn replace_lone_surrogates(text: &str) -> Cow<'_, str> {
    let mut out: Option<String> = None;
    let mut copied = 0;
    for escape in escapes(text).filter(|e| e.lone) {
        let out = out.get_or_insert_with(|| String::with_capacity(text.len()));
        out.push_str(&text[copied..escape.at]);
        out.push_str("\\ufffd");
        copied = escape.at + escape.len;
    }
    match out {
        Some(mut out) => {
            out.push_str(&text[copied..]);
            Cow::Owned(out)
        }
        None => Cow::Borrowed(text),
    }
}

/// The code unit of a `\uXXXX` escape starting at `at`.
fn hex_escape(bytes: &[u8], at: usize) -> Option<u16> {
    let escape = bytes.get(at..at + 6)?;
    if escape[0] != b'\\' || escape[1] != b'u' {
        return None;
    }
    let digits = std::str::from_utf8(&escape[2..]).ok()?;
    u16::from_str_radix(digits, 16).ok()
}

fn is_high(unit: u16) -> bool {
    (0xD800..=0xDBFF).contains(&unit)
}

fn is_low(unit: u16) -> bool {
    (0xDC00..=0xDFFF).contains(&unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lone_surrogates_inside_strings_are_replaced() {
        assert_eq!(replace_lone_surrogates(r#"{"s":"\ud800"}"#), r#"{"s":"\ufffd"}"#);
        assert_eq!(replace_lone_surrogates(r#"["\udc00x","\ud800\ud800"]"#), r#"["\ufffdx","\ufffd\ufffd"]"#);
        let pair = r#"["\ud83d\ude00", "\u00e9", "\\ud800"]"#;
        assert!(matches!(replace_lone_surrogates(pair), Cow::Borrowed(_)), "pairs, BMP escapes, escaped backslashes");
        assert_eq!(replace_lone_surrogates(r#"["\ud83d\ud800\ude00"]"#), r#"["\ufffd\ud800\ude00"]"#);
    }

    #[test]
    fn escapes_are_found_only_inside_strings() {
        let found: Vec<u16> = escapes(r#"{"\u0041": "\u0000", "x\"\u0042": 1}"#).map(|e| e.unit).collect();
        assert_eq!(found, [0x41, 0, 0x42]);
    }
}
