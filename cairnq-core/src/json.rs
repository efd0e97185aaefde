//! The JSON boundary: [`Json`], a task's JSON exactly as stored.
//!
//! Payloads, results, metadata and error envelopes travel between SDKs as
//! JSON text. Parsing that text into a `serde_json::Value` and writing it
//! back changes it: integers beyond 64 bits become floats, and a float can
//! come back one or two ULP off. So the SDK keeps the text it stored or read
//! untouched ([`Json`]) and parses it only where it must look inside, straight
//! into the type asked for. Values going in are checked once: NaN and
//! infinities are refused (PROTOCOL.md: never coerced).

mod deep;
mod escapes;
mod finite;

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// Why a value could not become JSON, or JSON could not become a value
/// (converted into [`Error::Serialization`](crate::Error::Serialization)
/// by `?`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError(pub String);

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for JsonError {}

type Result<T> = std::result::Result<T, JsonError>;

/// One JSON document exactly as written (a task's payload, result, metadata
/// or error envelope): numbers of any size and precision, `-0.0` and
/// subnormals read back as they were stored.
///
/// ```
/// use cairnq_core::Json;
/// let exact = Json::parse(r#"{"big": 1180591620717411303424, "third": 90.33333333333333}"#.to_string()).unwrap();
/// assert_eq!(exact.as_str(), r#"{"big": 1180591620717411303424, "third": 90.33333333333333}"#);
/// let n: u128 = Json::parse("1180591620717411303424".into()).unwrap().decode().unwrap();
/// assert_eq!(n, 1 << 70);
/// assert!(Json::encode(&f64::NAN).is_err());
/// ```
///
/// Through serde_json, a `Json` serializes as the JSON it holds (embedded,
/// not quoted). Equality is by text first, then by value
/// ([`to_value`](Self::to_value)), so `{"a": 1}` equals `{ "a" : 1 }`.
#[derive(Clone)]
pub struct Json(Box<RawValue>);

impl Json {
    /// The JSON `null`.
    pub fn null() -> Self {
        Self::trusted("null")
    }

    /// The empty object `{}`.
    pub fn empty_object() -> Self {
        Self::trusted("{}")
    }

    /// Text this module wrote itself, known to be valid JSON.
    fn trusted(text: &str) -> Self {
        Self(RawValue::from_string(text.to_string()).unwrap_or_default())
    }

    /// Encodes a value, refusing NaN and infinities. Integers of any width
    /// (`u128`) are kept.
    pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Self> {
        let value = deep::Stacked(value);
        finite::check_finite(&value).map_err(JsonError)?;
        serde_json::value::to_raw_value(&value).map(Self).map_err(|e| JsonError(e.to_string()))
    }

    /// Checks that `text` is one JSON document and keeps it verbatim. A
    /// refusal reads `not valid JSON: <why, with line and column>`, so a
    /// caller can say "X is {error}".
    /// Lone surrogate escapes (`"\ud800"`, which the Python SDK writes) are
    /// accepted and kept; see [`decode`](Self::decode).
    pub fn parse(text: String) -> Result<Self> {
        RawValue::from_string(text).map(Self).map_err(|e| JsonError(format!("not valid JSON: {e}")))
    }

    /// The document as text, exactly as held.
    pub fn as_str(&self) -> &str {
        self.0.get()
    }

    /// Decodes the document into `T`. A lone surrogate escape inside a
    /// string decodes as U+FFFD (the stored text keeps the escape).
    ///
    /// Documents nested up to 4,096 levels decode (serde_json alone stops
    /// at 128; the Python SDK reads about 1,000), without risk to the
    /// thread's stack; a deeper one is refused with an error saying so.
    ///
    /// ```
    /// # use cairnq_core::Json;
    /// let deep = Json::parse(format!("{}{}", "[".repeat(1_000), "]".repeat(1_000))).unwrap();
    /// let value: serde_json::Value = deep.decode().unwrap();
    /// assert_eq!(Json::from(&value), deep);
    /// ```
    pub fn decode<T: DeserializeOwned>(&self) -> Result<T> {
        let text = self.as_str();
        deep::from_str(text)
            .or_else(|first| match escapes::replace_lone_surrogates(text) {
                std::borrow::Cow::Owned(repaired) => deep::from_str(&repaired),
                std::borrow::Cow::Borrowed(_) => Err(first),
            })
            .map_err(JsonError)
    }

    /// The document as a `serde_json::Value`. Lossy where `Value` is: an
    /// integer beyond 64 bits becomes the nearest float, and a number past
    /// f64's range is refused; [`decode`](Self::decode) into a type of your
    /// own (or [`as_str`](Self::as_str)) keeps them.
    pub fn to_value(&self) -> Result<Value> {
        self.decode()
    }

    /// Whether the document is a JSON object (`{...}`), without parsing it.
    pub fn is_object(&self) -> bool {
        self.as_str().trim_start().starts_with('{')
    }

    /// Whether a string of the document holds `\u0000` (which Postgres
    /// text and jsonb cannot store).
    pub fn contains_nul(&self) -> bool {
        escapes::escapes(self.as_str()).any(|e| e.unit == 0)
    }

    /// Whether a string of the document holds a lone UTF-16 surrogate
    /// escape (valid JSON text, but no Unicode text; see
    /// [`decode`](Self::decode)).
    pub fn contains_lone_surrogate(&self) -> bool {
        escapes::escapes(self.as_str()).any(|e| e.lone)
    }

    /// Whether the document is `null`.
    pub fn is_null(&self) -> bool {
        self.as_str().trim() == "null"
    }
}

impl From<Value> for Json {
    fn from(value: Value) -> Self {
        Self::from(&value)
    }
}

impl From<&Value> for Json {
    /// A `Value` holds only finite numbers and string keys, so encoding it
    /// cannot fail (the `null` fallback is never taken).
    fn from(value: &Value) -> Self {
        Self(serde_json::value::to_raw_value(&deep::Stacked(value)).unwrap_or_default())
    }
}

impl Default for Json {
    /// `null`.
    fn default() -> Self {
        Self::null()
    }
}

impl PartialEq for Json {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str() || matches!((self.to_value(), other.to_value()), (Ok(a), Ok(b)) if a == b)
    }
}

impl PartialEq<Value> for Json {
    fn eq(&self, other: &Value) -> bool {
        self.to_value().is_ok_and(|value| value == *other)
    }
}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(Self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_keep_their_exact_text() {
        for text in ["90.33333333333333", "1180591620717411303424", "-0.0", "5e-324", "1e400", "[1.0,2]"] {
            assert_eq!(Json::parse(text.to_string()).expect("valid").as_str(), text);
        }
        assert_eq!(Json::encode(&u128::MAX).expect("encodes").as_str(), u128::MAX.to_string());
        assert_eq!(Json::encode(&-0.0f64).expect("encodes").as_str(), "-0.0");
    }

    #[test]
    fn lone_surrogates_are_kept_in_text_and_replaced_when_decoded() {
        let json = Json::parse(r#"{"s":"a\ud800b"}"#.to_string()).expect("valid JSON text");
        assert_eq!(json.as_str(), r#"{"s":"a\ud800b"}"#);
        let value = json.to_value().expect("decodes");
        assert_eq!(value["s"], "a\u{fffd}b");
    }

    #[test]
    fn invalid_text_is_refused() {
        assert!(Json::parse("{".to_string()).is_err());
        assert!(Json::parse("1 2".to_string()).is_err());
    }

    #[test]
    fn serializes_embedded_and_compares_by_value() {
        let json = Json::parse(r#"{ "a" : 1 }"#.to_string()).expect("valid");
        let outer = serde_json::to_string(&serde_json::json!({"x": 1})).expect("serializes");
        assert_eq!(outer, r#"{"x":1}"#);
        assert_eq!(serde_json::to_string(&vec![json.clone()]).expect("serializes"), r#"[{ "a" : 1 }]"#);
        assert_eq!(json, Json::from(serde_json::json!({"a": 1})));
        assert!(json.is_object() && !json.is_null() && Json::null().is_null());
    }
}
