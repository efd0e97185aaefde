//! Assertions of CONFORMANCE.md and the JSON equality they use.
//!
//! Values compare as JSON, not as Rust types: numbers by numeric value
//! (`1` equals `1.0`), booleans never equal numbers, objects and arrays
//! structurally. Every failure says which assertion failed and shows the
//! actual value.

use std::cmp::Ordering;

use serde::Deserialize;
use serde_json::{Map, Number, Value};

use super::file::present;
use super::refs::path;

/// The assertions of one step, already resolved. A present key is an
/// assertion even when its value is `null` (`"equalsRef": null` asserts the
/// target is null); only absence skips it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct Assertions {
    equals: Option<Map<String, Value>>,
    #[serde(default, deserialize_with = "present")]
    equals_ref: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    not_equals_ref: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    greater_than_ref: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    length: Option<Value>,
    not_null: Option<Vec<String>>,
    is_null: Option<Vec<String>>,
}

impl Assertions {
    /// Decodes resolved assertions, refusing unknown assertion names.
    pub(crate) fn from_value(value: Value) -> Result<Self, String> {
        serde_json::from_value(value).map_err(|e| format!("bad assertions: {e}"))
    }

    /// Checks every assertion against `target`; the first failure, described.
    pub(crate) fn check(&self, target: &Value) -> Result<(), String> {
        for (name, expected) in self.equals.iter().flatten() {
            let actual = path(target, name).map_err(|e| format!("equals.{name}: {e} (target {target})"))?;
            if !json_equal(actual, expected) {
                return Err(format!("equals.{name}: expected {expected}, actual {actual} (target {target})"));
            }
        }
        if let Some(expected) = self.equals_ref.as_ref().filter(|e| !json_equal(target, e)) {
            return Err(format!("equalsRef: expected {expected}, actual {target}"));
        }
        if let Some(other) = self.not_equals_ref.as_ref().filter(|o| json_equal(target, o)) {
            return Err(format!("notEqualsRef: expected a value other than {other}, actual {target}"));
        }
        if let Some(bound) = &self.greater_than_ref {
            check_greater(target, bound)?;
        }
        if let Some(expected) = &self.length {
            check_length(target, expected)?;
        }
        check_nulls("notNull", self.not_null.as_deref(), target, false)?;
        check_nulls("isNull", self.is_null.as_deref(), target, true)
    }
}

fn check_greater(target: &Value, bound: &Value) -> Result<(), String> {
    match (target, bound) {
        (Value::Number(t), Value::Number(b)) if compare_numbers(t, b) == Some(Ordering::Greater) => Ok(()),
        (Value::Number(_), Value::Number(_)) => {
            Err(format!("greaterThanRef: expected more than {bound}, actual {target}"))
        }
        _ => Err(format!("greaterThanRef: expected two numbers, actual {target} vs {bound}")),
    }
}

fn check_length(target: &Value, expected: &Value) -> Result<(), String> {
    let actual = match target {
        Value::Array(items) => items.len(),
        Value::Object(map) => map.len(),
        other => return Err(format!("length: expected an array of length {expected}, actual {other}")),
    };
    if json_equal(&Value::from(actual), expected) {
        Ok(())
    } else {
        Err(format!("length: expected {expected}, actual {actual} in {target}"))
    }
}

/// `notNull` / `isNull`. An empty list checks the target itself, so
/// `{"target": "$t.id", "notNull": []}` asserts that `$t.id` is set.
fn check_nulls(assertion: &str, fields: Option<&[String]>, target: &Value, want_null: bool) -> Result<(), String> {
    let Some(fields) = fields else { return Ok(()) };
    if fields.is_empty() && target.is_null() != want_null {
        return Err(format!("{assertion}: actual {target}"));
    }
    for name in fields {
        let actual = path(target, name).map_err(|e| format!("{assertion}.{name}: {e} (target {target})"))?;
        if actual.is_null() != want_null {
            return Err(format!("{assertion}.{name}: actual {actual} (target {target})"));
        }
    }
    Ok(())
}

/// JSON equality: numbers by value, everything else structurally.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Numbers by value: exactly when both are integers, else as floats.
fn compare_numbers(x: &Number, y: &Number) -> Option<Ordering> {
    if let (Some(i), Some(j)) = (x.as_i64(), y.as_i64()) {
        return Some(i.cmp(&j));
    }
    if let (Some(i), Some(j)) = (x.as_u64(), y.as_u64()) {
        return Some(i.cmp(&j));
    }
    x.as_f64()?.partial_cmp(&y.as_f64()?)
}

#[cfg(test)]
mod tests {
    //! The equality and assertion rules on hand-made values.
    use serde_json::json;

    use super::*;

    fn check(assertions: Value, target: Value) -> Result<(), String> {
        Assertions::from_value(assertions)?.check(&target)
    }

    #[test]
    fn numbers_compare_by_value_and_booleans_never_equal_numbers() {
        assert!(json_equal(&json!(1), &json!(1.0)));
        assert!(json_equal(&json!({"a": [1, 2.5]}), &json!({"a": [1.0, 2.5]})));
        assert!(!json_equal(&json!(true), &json!(1)));
        assert!(!json_equal(&json!(false), &json!(0)));
        assert!(!json_equal(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!json_equal(&json!([1, 2]), &json!([2, 1])));
    }

    #[test]
    fn equals_names_field_expected_and_actual() {
        let err = check(json!({"equals": {"status": "canceled"}}), json!({"status": "succeeded"}))
            .expect_err("the status differs");
        assert!(err.starts_with(r#"equals.status: expected "canceled", actual "succeeded""#), "{err}");
        assert_eq!(check(json!({"equals": {"progress": 1}}), json!({"progress": 1.0})), Ok(()));
        assert_eq!(check(json!({"equals": {"error.code": "x"}}), json!({"error": {"code": "x"}})), Ok(()));
    }

    #[test]
    fn refs_length_and_order() {
        assert_eq!(check(json!({"equalsRef": 3, "greaterThanRef": 2.5, "notEqualsRef": 4}), json!(3)), Ok(()));
        assert!(check(json!({"greaterThanRef": 3}), json!(3)).is_err());
        assert!(check(json!({"greaterThanRef": 1}), json!("2")).is_err());
        assert_eq!(check(json!({"length": 2}), json!([1, 2])), Ok(()));
        let err = check(json!({"length": 1}), json!([])).expect_err("empty array");
        assert!(err.starts_with("length: expected 1, actual 0"), "{err}");
    }

    #[test]
    fn null_checks_on_fields_and_on_the_target_itself() {
        let row = json!({"id": "t", "error": null});
        assert_eq!(check(json!({"notNull": ["id"], "isNull": ["error", "absent"]}), row.clone()), Ok(()));
        assert!(check(json!({"notNull": ["error"]}), row).is_err());
        assert_eq!(check(json!({"notNull": []}), json!("task_1")), Ok(()));
        assert!(check(json!({"notNull": []}), Value::Null).is_err());
        assert_eq!(check(json!({"isNull": []}), Value::Null), Ok(()));
    }

    #[test]
    fn a_null_reference_is_still_an_assertion() {
        assert_eq!(check(json!({"equalsRef": null}), Value::Null), Ok(()));
        assert!(check(json!({"equalsRef": null}), json!({"id": "t"})).is_err());
        assert!(check(json!({"notEqualsRef": null}), Value::Null).is_err());
    }

    #[test]
    fn unknown_assertions_are_refused() {
        assert!(check(json!({"equal": {"a": 1}}), json!({"a": 1})).is_err());
    }
}
