//! Typed access to a step's resolved `args`, with CONFORMANCE.md's
//! defaults applied by the callers.
//!
//! Two kinds of mistakes are told apart. An argument the op does not know,
//! or a required one that is missing, is a broken scenario ([`StepError::
//! Scenario`]): it can never be "expected". A known argument of the wrong
//! JSON type is refused input, so it surfaces as `ValidationError`, the same
//! kind a caller of another SDK would get.

use cairnq_core::Error;
use serde_json::{Map, Value};

/// Why a step failed.
#[derive(Debug)]
pub(crate) enum StepError {
    /// The operation failed; an `expectError` step may expect this.
    Cairnq(Error),
    /// The scenario itself is broken (unknown op, argument or alias).
    Scenario(String),
}

impl From<Error> for StepError {
    fn from(error: Error) -> Self {
        Self::Cairnq(error)
    }
}

/// A step's arguments, checked against the names its op accepts.
pub(crate) struct Args {
    map: Map<String, Value>,
}

impl Args {
    /// `value` (an object or null) as the arguments of an op that accepts
    /// `known` names.
    pub(crate) fn new(value: Value, known: &[&str]) -> Result<Self, StepError> {
        let map = match value {
            Value::Null => Map::new(),
            Value::Object(map) => map,
            other => return Err(StepError::Scenario(format!("`args` must be an object, found {other}"))),
        };
        if let Some(unknown) = map.keys().find(|key| !known.contains(&key.as_str())) {
            return Err(StepError::Scenario(format!("unknown argument `{unknown}` (known: {})", known.join(", "))));
        }
        Ok(Self { map })
    }

    /// The argument, or `None` when absent or null.
    pub(crate) fn value(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// The argument, or `default` when absent or null.
    pub(crate) fn value_or(&self, name: &str, default: Value) -> Value {
        self.value(name).cloned().unwrap_or(default)
    }

    /// A required argument.
    pub(crate) fn required<T>(
        &self,
        name: &'static str,
        get: impl Fn(&Self, &'static str) -> Result<Option<T>, StepError>,
    ) -> Result<T, StepError> {
        get(self, name)?.ok_or_else(|| StepError::Scenario(format!("missing required argument `{name}`")))
    }

    /// An optional argument of any JSON type.
    pub(crate) fn json(&self, name: &'static str) -> Result<Option<Value>, StepError> {
        Ok(self.value(name).cloned())
    }

    /// An optional string argument.
    pub(crate) fn string(&self, name: &'static str) -> Result<Option<String>, StepError> {
        self.typed(name, "a string", |v| v.as_str().map(str::to_string))
    }

    /// An optional integer argument (an integral float such as `3.0` counts).
    pub(crate) fn int(&self, name: &'static str) -> Result<Option<i64>, StepError> {
        self.typed(name, "an integer", as_integer)
    }

    /// An integer argument with a default.
    pub(crate) fn int_or(&self, name: &'static str, default: i64) -> Result<i64, StepError> {
        Ok(self.int(name)?.unwrap_or(default))
    }

    /// An integer argument with a default, in the range of `T`; a value
    /// outside it is the step's ValidationError on `name` (what a typed
    /// API makes of, say, a negative delay).
    pub(crate) fn sized_or<T: TryFrom<i64>>(&self, name: &'static str, default: T) -> Result<T, StepError> {
        match self.int(name)? {
            None => Ok(default),
            Some(value) => {
                T::try_from(value).map_err(|_| Error::validation(name, format!("{value} is out of range")).into())
            }
        }
    }

    /// An optional number argument.
    pub(crate) fn float(&self, name: &'static str) -> Result<Option<f64>, StepError> {
        self.typed(name, "a number", Value::as_f64)
    }

    /// A boolean argument with a default.
    pub(crate) fn bool_or(&self, name: &'static str, default: bool) -> Result<bool, StepError> {
        Ok(self.typed(name, "a boolean", Value::as_bool)?.unwrap_or(default))
    }

    /// An optional array-of-strings argument.
    pub(crate) fn strings(&self, name: &'static str) -> Result<Option<Vec<String>>, StepError> {
        self.typed(name, "an array of strings", |v| {
            v.as_array()?.iter().map(|item| item.as_str().map(str::to_string)).collect()
        })
    }

    fn typed<T>(
        &self,
        name: &'static str,
        expected: &str,
        convert: impl Fn(&Value) -> Option<T>,
    ) -> Result<Option<T>, StepError> {
        let Some(value) = self.value(name) else { return Ok(None) };
        let converted =
            convert(value).ok_or_else(|| Error::validation(name, format!("must be {expected}, not {value}")))?;
        Ok(Some(converted))
    }
}

fn as_integer(value: &Value) -> Option<i64> {
    if let Some(i) = value.as_i64() {
        return Some(i);
    }
    let f = value.as_f64()?;
    // Only whole floats inside i64's range convert; 1.5 or 1e300 are refused.
    (f.fract() == 0.0 && f.abs() < 9.0e18).then_some(f as i64)
}

#[cfg(test)]
mod tests {
    //! Argument checking on hand-made values.
    use cairnq_core::ErrorKind;
    use serde_json::json;

    use super::*;

    #[test]
    fn unknown_arguments_break_the_scenario() {
        let err = Args::new(json!({"lease": 5}), &["lease_ms"]).err();
        assert!(matches!(err, Some(StepError::Scenario(m)) if m.contains("unknown argument `lease`")));
    }

    #[test]
    fn wrong_types_are_validation_errors_and_null_means_absent() {
        let args = Args::new(json!({"n": "3", "f": 2.0, "h": 1.5, "z": null}), &["n", "f", "h", "z"])
            .expect("known arguments");
        assert!(matches!(args.int("n"), Err(StepError::Cairnq(e)) if e.kind() == ErrorKind::ValidationError));
        assert!(matches!(args.int("f"), Ok(Some(2))));
        assert!(matches!(args.int("h"), Err(StepError::Cairnq(_))));
        assert!(matches!(args.int_or("z", 7), Ok(7)));
        assert!(matches!(args.required("z", Args::int), Err(StepError::Scenario(_))));
    }
}
