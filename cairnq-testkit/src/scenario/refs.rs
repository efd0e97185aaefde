//! References: `$alias`, `$alias.field`, `$alias.0.field`, resolved against
//! the values saved by earlier steps just before a step runs.

use std::collections::HashMap;

use serde_json::Value;

static NULL: Value = Value::Null;

/// The values earlier steps saved, by alias.
#[derive(Debug, Default)]
pub(crate) struct Bindings {
    saved: HashMap<String, Value>,
}

impl Bindings {
    /// Saves `value` under `alias`, replacing an earlier value.
    pub(crate) fn save(&mut self, alias: &str, value: Value) {
        self.saved.insert(alias.to_string(), value);
    }

    /// `value` with every reference inside it replaced by what it points at.
    /// Resolved values are not resolved again: a saved string that starts
    /// with `$` stays a string.
    pub(crate) fn resolve(&self, value: &Value) -> Result<Value, String> {
        match value {
            Value::String(s) if s.starts_with('$') => self.lookup(s),
            Value::Array(items) => {
                items.iter().map(|item| self.resolve(item)).collect::<Result<_, _>>().map(Value::Array)
            }
            Value::Object(map) => {
                let resolved = map.iter().map(|(k, v)| Ok((k.clone(), self.resolve(v)?)));
                resolved.collect::<Result<_, String>>().map(Value::Object)
            }
            other => Ok(other.clone()),
        }
    }

    fn lookup(&self, reference: &str) -> Result<Value, String> {
        let mut parts = reference[1..].split('.');
        let alias = parts.next().unwrap_or_default();
        let root = self.saved.get(alias).ok_or_else(|| format!("reference {reference}: no step saved `{alias}`"))?;
        let mut current = root;
        for part in parts {
            current = field(current, part).map_err(|e| format!("reference {reference}: {e}"))?;
        }
        Ok(current.clone())
    }
}

/// One step into a value: an object field, or an array index. Fields of a
/// null (and missing fields or indexes) are null.
pub(crate) fn field<'v>(value: &'v Value, part: &str) -> Result<&'v Value, String> {
    match value {
        Value::Null => Ok(&NULL),
        Value::Object(map) => Ok(map.get(part).unwrap_or(&NULL)),
        Value::Array(items) => {
            let index: usize = part.parse().map_err(|_| format!("`{part}` is not an index into an array"))?;
            Ok(items.get(index).unwrap_or(&NULL))
        }
        scalar => Err(format!("cannot take `{part}` of {scalar}")),
    }
}

/// A field of an assertion's target: the key itself when the target has it,
/// else a dotted path (`error.code`, `0.id`).
pub(crate) fn path<'v>(value: &'v Value, name: &str) -> Result<&'v Value, String> {
    if let Some(exact) = value.as_object().and_then(|map| map.get(name)) {
        return Ok(exact);
    }
    name.split('.').try_fold(value, field)
}

#[cfg(test)]
mod tests {
    //! Reference resolution on hand-made values.
    use serde_json::json;

    use super::*;

    fn bindings() -> Bindings {
        let mut b = Bindings::default();
        b.save("t", json!({"id": "task_1", "error": null, "rows": [{"id": "a"}, {"id": "b"}]}));
        b.save("n", Value::Null);
        b.save("s", json!("$not_a_reference"));
        b
    }

    #[test]
    fn resolves_fields_indexes_and_nesting() {
        let b = bindings();
        let args = json!({"id": "$t.id", "ids": ["$t.rows.1.id", "$t.rows.0.id"], "n": 3, "lit": "plain"});
        let want = json!({"id": "task_1", "ids": ["b", "a"], "n": 3, "lit": "plain"});
        assert_eq!(b.resolve(&args), Ok(want));
    }

    #[test]
    fn fields_of_null_and_missing_are_null() {
        let b = bindings();
        assert_eq!(b.resolve(&json!("$n.id.x")), Ok(Value::Null));
        assert_eq!(b.resolve(&json!("$t.error.code")), Ok(Value::Null));
        assert_eq!(b.resolve(&json!("$t.rows.9.id")), Ok(Value::Null));
        assert_eq!(b.resolve(&json!("$t.nope")), Ok(Value::Null));
    }

    #[test]
    fn resolved_values_are_not_resolved_again() {
        assert_eq!(bindings().resolve(&json!("$s")), Ok(json!("$not_a_reference")));
    }

    #[test]
    fn unknown_alias_and_bad_steps_are_errors() {
        let b = bindings();
        assert!(b.resolve(&json!("$missing.id")).expect_err("unknown alias").contains("no step saved `missing`"));
        assert!(b.resolve(&json!("$t.rows.first")).expect_err("word index").contains("not an index"));
        assert!(b.resolve(&json!("$t.id.x")).expect_err("field of a string").contains("cannot take `x`"));
    }

    #[test]
    fn paths_prefer_exact_keys() {
        let v = json!({"a.b": 1, "a": {"b": 2}});
        assert_eq!(path(&v, "a.b"), Ok(&json!(1)));
        assert_eq!(path(&json!({"a": {"b": 2}}), "a.b"), Ok(&json!(2)));
    }
}
