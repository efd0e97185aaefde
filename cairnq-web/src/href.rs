//! The parts of links the dashboard writes from data (a filter's values, a
//! schedule's name, a notice), encoded by the same crates axum decodes
//! them with, so what a handler reads back is what the page meant.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Bytes a path segment keeps as they are: RFC 3986's unreserved ones.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `pairs` as a query string (no `?`), form-encoded as a browser encodes a
/// GET form (a space is `+`): what axum's `Query` and `Form` read.
pub(crate) fn query(pairs: &[(&str, &str)]) -> String {
    // Only a value serde cannot write as a string fails; pairs of strings never do.
    serde_urlencoded::to_string(pairs).expect("string pairs always form-encode")
}

/// `text` as one path segment: every byte but unreserved ones
/// percent-encoded, so a `/` or `?` in a name stays inside its segment.
pub(crate) fn segment(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_in_their_segment_and_values_in_their_field() {
        assert_eq!(segment("night & <b>day</b>/1"), "night%20%26%20%3Cb%3Eday%3C%2Fb%3E%2F1");
        assert_eq!(segment("task_01J.x-y~z"), "task_01J.x-y~z");
        assert_eq!(
            query(&[("queue", "a b&c=d"), ("next", "/tasks?x=%20")]),
            "queue=a+b%26c%3Dd&next=%2Ftasks%3Fx%3D%2520"
        );
        assert_eq!(query(&[]), "");
    }
}
