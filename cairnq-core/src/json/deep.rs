//! JSON nested deeper than serde_json's default limit of 128 levels.
//!
//! serde_json parses and writes by recursive descent, one stack frame or
//! more per level, and refuses to parse past 128 levels so that a deep
//! document cannot overflow the thread's stack. The other SDKs read deeper:
//! the Python SDK's `json` module recurses up to the interpreter's
//! recursion limit (994 levels with the default limit of 1,000, measured
//! with Python 3.11), and a raw [`Json`](super::Json) keeps any depth. So a
//! document the ordinary parse refuses for its depth is parsed again with
//! the limit off, through `serde_stacker`, which moves the descent onto a
//! fresh stack segment on the heap whenever the thread's own runs low: the
//! decode cannot overflow whatever the depth and whichever thread runs it.
//! Encoding goes through the same adapter ([`Stacked`]).
//!
//! Why not a thread with a big stack per deep decode: it costs a thread
//! spawn and a fixed guess of the size, and what the caller does next with
//! the value still runs on its own thread. Why not an iterative parser: it
//! would reimplement serde's decoding into the caller's type `T`.
//!
//! What stays recursive is outside serde: dropping, comparing or printing
//! the decoded value (`serde_json::Value`'s `Drop` takes about 200 bytes
//! of stack per level in a debug build, so a tokio worker's 2 MiB stack
//! runs out near 10,000 levels). So a typed decode stops at [`MAX_DEPTH`]
//! levels, four times what the Python SDK reads, with an error saying so;
//! the stored text is never refused.

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};

/// The deepest document a typed decode accepts.
pub(crate) const MAX_DEPTH: usize = 4_096;

/// Decodes `text` into `T` at any depth up to [`MAX_DEPTH`]; the error as
/// text.
pub(crate) fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    match serde_json::from_str(text) {
        Err(e) if is_depth_limit(&e) => from_deep_str(text),
        decoded => decoded.map_err(|e| e.to_string()),
    }
}

/// serde_json's refusal of a document past its 128 levels.
fn is_depth_limit(error: &serde_json::Error) -> bool {
    error.is_syntax() && error.to_string().starts_with("recursion limit exceeded")
}

fn from_deep_str<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let depth = nesting_depth(text);
    if depth > MAX_DEPTH {
        return Err(format!(
            "nested {depth} levels deep; a typed decode reads at most {MAX_DEPTH} levels \
             (the stored text is kept whole: read it as Json)"
        ));
    }
    let mut parser = serde_json::Deserializer::from_str(text);
    parser.disable_recursion_limit();
    let value = T::deserialize(serde_stacker::Deserializer::new(&mut parser)).map_err(|e| e.to_string())?;
    parser.end().map_err(|e| e.to_string())?;
    Ok(value)
}

/// How deep arrays and objects nest in `text` (0 for a scalar), read
/// without parsing: brackets inside strings do not count.
pub(crate) fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for byte in text.bytes() {
        match (in_string, byte) {
            (true, _) if escaped => escaped = false,
            (true, b'\\') => escaped = true,
            (true, b'"') | (false, b'"') => in_string = !in_string,
            (false, b'[' | b'{') => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            (false, b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// `T` serialized through `serde_stacker`, so writing (or walking) a deep
/// value cannot overflow the stack.
pub(crate) struct Stacked<'a, T: ?Sized>(pub(crate) &'a T);

impl<T: Serialize + ?Sized> Serialize for Stacked<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serde_stacker::Serializer::new(serializer))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn depth_counts_brackets_outside_strings() {
        assert_eq!(nesting_depth("1"), 0);
        assert_eq!(nesting_depth(r#"{"a": [1, {"b": "[[[\"{"}]}"#), 3);
        assert_eq!(nesting_depth(&nested(300)), 300);
    }

    #[test]
    fn deep_documents_decode_up_to_the_limit_and_are_refused_past_it() {
        for depth in [127, 128, 129, 1_000, MAX_DEPTH] {
            let value: Value = from_str(&nested(depth)).unwrap_or_else(|e| panic!("{depth}: {e}"));
            assert_eq!(serde_json::to_string(&Stacked(&value)).expect("encodes"), nested(depth));
        }
        let refused = from_str::<Value>(&nested(MAX_DEPTH + 1)).expect_err("too deep");
        assert!(refused.contains(&format!("nested {} levels deep", MAX_DEPTH + 1)), "{refused}");
        assert!(from_str::<Value>(&format!("{} x", nested(200))).is_err(), "trailing text is still refused");
    }
}
