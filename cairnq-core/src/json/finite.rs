//! The finiteness check at the JSON boundary.
//!
//! serde_json quietly turns a NaN or an infinity into `null`; PROTOCOL.md
//! says such values are rejected with SerializationError, never coerced. So
//! typed values are walked once by this serializer, which writes nothing and
//! fails on the first non-finite float, before they are encoded.

use serde::Serialize;
use serde::ser;

/// Fails when `value` holds a float JSON cannot represent.
pub(crate) fn check_finite<T: Serialize + ?Sized>(value: &T) -> Result<(), String> {
    value.serialize(FiniteCheck).map_err(|e| e.0)
}

#[derive(Debug)]
struct CheckError(String);

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CheckError {}

impl ser::Error for CheckError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}

/// A serializer that writes nothing and fails on a non-finite float.
struct FiniteCheck;

fn check_float(v: f64) -> std::result::Result<(), CheckError> {
    if v.is_finite() {
        Ok(())
    } else {
        Err(CheckError(format!("{v} is not a JSON number (NaN and infinities are refused)")))
    }
}

macro_rules! accept {
    ($($method:ident($ty:ty)),* $(,)?) => {
        $(fn $method(self, _v: $ty) -> std::result::Result<(), CheckError> { Ok(()) })*
    };
}

impl ser::Serializer for FiniteCheck {
    type Ok = ();
    type Error = CheckError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Self;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    accept!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_i128(i128),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_u128(u128),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str),
    );

    fn serialize_f32(self, v: f32) -> std::result::Result<(), CheckError> {
        check_float(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> std::result::Result<(), CheckError> {
        check_float(v)
    }
    fn serialize_none(self) -> std::result::Result<(), CheckError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> std::result::Result<(), CheckError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> std::result::Result<(), CheckError> {
        Ok(())
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, _: &'static str) -> std::result::Result<(), CheckError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> std::result::Result<(), CheckError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        v: &T,
    ) -> std::result::Result<(), CheckError> {
        v.serialize(self)
    }
    fn serialize_seq(self, _: Option<usize>) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_tuple(self, _: usize) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_map(self, _: Option<usize>) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> std::result::Result<Self, CheckError> {
        Ok(self)
    }
}

macro_rules! walk_compound {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for FiniteCheck {
            type Ok = ();
            type Error = CheckError;
            fn $method<T: Serialize + ?Sized>(&mut self, v: &T) -> std::result::Result<(), CheckError> {
                v.serialize(FiniteCheck)
            }
            fn end(self) -> std::result::Result<(), CheckError> {
                Ok(())
            }
        })*
    };
}

walk_compound!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
);

macro_rules! walk_named_fields {
    ($($trait:ident),* $(,)?) => {
        $(impl ser::$trait for FiniteCheck {
            type Ok = ();
            type Error = CheckError;
            fn serialize_field<T: Serialize + ?Sized>(&mut self, _: &'static str, v: &T) -> std::result::Result<(), CheckError> {
                v.serialize(FiniteCheck)
            }
            fn end(self) -> std::result::Result<(), CheckError> {
                Ok(())
            }
        })*
    };
}

walk_named_fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for FiniteCheck {
    type Ok = ();
    type Error = CheckError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, _key: &T) -> std::result::Result<(), CheckError> {
        // Keys are checked by serde_json itself (it refuses non-string keys).
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> std::result::Result<(), CheckError> {
        v.serialize(FiniteCheck)
    }
    fn end(self) -> std::result::Result<(), CheckError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! Every serde shape that can carry a float is walked.

    use serde::Serialize;

    use crate::json::Json;

    fn to_json<T: Serialize>(value: &T) -> crate::Result<serde_json::Value> {
        Ok(Json::encode(value).and_then(|json| json.to_value())?)
    }

    #[derive(Serialize)]
    struct Point {
        x: f64,
        tags: Vec<Option<f32>>,
    }

    #[derive(Serialize)]
    enum Shape {
        Circle { radius: f64 },
        Pair(f64, f64),
        Wrapped(Point),
    }

    #[test]
    fn non_finite_floats_are_refused_in_every_shape() {
        let bad = [
            to_json(&Point { x: f64::NAN, tags: vec![] }),
            to_json(&Point { x: 1.0, tags: vec![None, Some(f32::NEG_INFINITY)] }),
            to_json(&Shape::Circle { radius: f64::INFINITY }),
            to_json(&Shape::Pair(0.0, f64::NAN)),
            to_json(&Shape::Wrapped(Point { x: f64::NAN, tags: vec![] })),
            to_json(&(1, f64::NAN)),
            to_json(&std::collections::BTreeMap::from([("k", f64::NAN)])),
        ];
        for result in bad {
            assert!(matches!(result, Err(crate::Error::Serialization(_))), "{result:?}");
        }
    }

    #[test]
    fn finite_values_convert_unchanged() {
        let value = to_json(&Shape::Wrapped(Point { x: 2.5, tags: vec![Some(1.5), None] })).expect("finite");
        assert_eq!(value, serde_json::json!({"Wrapped": {"x": 2.5, "tags": [1.5, null]}}));
    }
}
