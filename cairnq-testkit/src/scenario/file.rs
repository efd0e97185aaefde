//! The scenario file format of CONFORMANCE.md, parsed strictly.
//!
//! Unknown keys are refused rather than ignored: a misspelled `expect` or
//! `expectError` would otherwise turn into a step that can never fail.

use std::path::Path;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// One scenario: a name, a sentence saying what it pins, and its steps.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// A snake_case name, shown in every message.
    pub name: String,
    /// One sentence: the behaviour pinned.
    #[serde(default)]
    pub description: String,
    /// The steps, run in order against one fresh store.
    pub steps: Vec<Step>,
}

/// One step: an op with arguments, or `op: expect` with a `target`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Step {
    /// The operation (`submit`, `claim`, ..., `sleep`, `expect`).
    pub op: String,
    /// The op's arguments (references allowed); absent means `{}`.
    #[serde(default)]
    pub args: Option<Value>,
    /// Store the step's result (or its expected error) under this alias.
    #[serde(default)]
    pub save: Option<String>,
    /// Assertions on the step's own result.
    #[serde(default)]
    pub expect: Option<Value>,
    /// The error kind the step must fail with.
    #[serde(default, rename = "expectError")]
    pub expect_error: Option<String>,
    /// What an `expect` step checks (references allowed; `null` is a
    /// target too).
    #[serde(default, deserialize_with = "present")]
    pub target: Option<Value>,
    /// Every other key: the assertions of an `expect` step, or a mistake.
    #[serde(flatten)]
    pub(crate) rest: Map<String, Value>,
}

/// Step keys that only annotate and are never checked.
const ANNOTATIONS: &[&str] = &["description", "comment"];

/// Deserializes a present key as `Some`, even when its value is `null`.
pub(crate) fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(deserializer).map(Some)
}

impl Scenario {
    /// Parses a scenario from JSON text.
    ///
    /// ```
    /// let s = cairnq_testkit::scenario::Scenario::parse(
    ///     r#"{"name": "n", "steps": [{"op": "stats"}]}"#,
    /// ).unwrap();
    /// assert_eq!(s.steps[0].op, "stats");
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        let scenario: Self = serde_json::from_str(text).map_err(|e| format!("not a scenario file: {e}"))?;
        for (index, step) in scenario.steps.iter().enumerate() {
            step.check_keys().map_err(|e| format!("steps[{index}] ({}): {e}", step.op))?;
        }
        Ok(scenario)
    }

    /// Reads and parses a scenario file.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Self::parse(&text)
    }
}

impl Step {
    /// The assertions this step carries: its inline `expect`, and for an
    /// `expect` step also the assertion keys written on the step itself.
    pub(crate) fn assertions(&self) -> Value {
        let mut all = match &self.expect {
            Some(Value::Object(map)) => map.clone(),
            _ => Map::new(),
        };
        if self.op == "expect" {
            let own = self.rest.iter().filter(|(key, _)| !ANNOTATIONS.contains(&key.as_str()));
            all.extend(own.map(|(key, value)| (key.clone(), value.clone())));
        }
        Value::Object(all)
    }

    fn check_keys(&self) -> Result<(), String> {
        if let Some(expect) = self.expect.as_ref().filter(|e| !e.is_object()) {
            return Err(format!("`expect` must be an object, found {expect}"));
        }
        if self.op == "expect" {
            return match self.args {
                Some(_) => Err("an expect step takes a `target`, not `args`".to_string()),
                None => Ok(()),
            };
        }
        if self.target.is_some() {
            return Err("`target` belongs to expect steps; other ops take `args`".to_string());
        }
        match self.rest.keys().find(|key| !ANNOTATIONS.contains(&key.as_str())) {
            Some(key) => Err(format!("unknown step key `{key}` (assertions go in `expect`)")),
            None => Ok(()),
        }
    }
}
