//! The interpreter's own rules, on real SQLite stores: what a failure
//! message names, how expected errors are matched and saved, and how broken
//! scenarios are reported rather than passed.

use cairnq_testkit::scenario::{self, Outcome, Scenario};
use cairnq_testkit::sqlite::SqliteFactory;

/// Runs one scenario given as JSON text; its outcome.
async fn outcome(text: &str) -> Outcome {
    let scenario = Scenario::parse(text).expect("a well-formed scenario");
    let factory = SqliteFactory::new().expect("temp dir");
    let mut report = scenario::run_scenarios(&factory, &[scenario]).await;
    report.outcomes.pop().expect("one outcome")
}

fn failure(outcome: &Outcome) -> &str {
    outcome.failure.as_deref().unwrap_or_else(|| panic!("expected a failure, got {outcome}"))
}

#[tokio::test]
async fn a_failed_assertion_names_scenario_step_assertion_and_actual_value() {
    let out = outcome(
        r#"{"name": "wrong_status", "steps": [
            {"op": "submit", "args": {"name": "job"}, "save": "t"},
            {"op": "get", "args": {"id": "$t.id"}, "expect": {"equals": {"status": "running"}}}
        ]}"#,
    )
    .await;
    assert!(
        failure(&out).starts_with(r#"steps[1] (get): equals.status: expected "running", actual "queued""#),
        "{out}"
    );
    assert!(out.to_string().starts_with("FAIL wrong_status: steps[1] (get)"), "{out}");
}

#[tokio::test]
async fn expected_errors_are_saved_as_task_id_and_type() {
    let out = outcome(
        r#"{"name": "saved_errors", "steps": [
            {"op": "submit", "args": {"name": ""}, "expectError": "ValidationError", "save": "v"},
            {"op": "expect", "target": "$v", "equalsRef": {"task_id": null, "type": "ValidationError"}},
            {"op": "submit", "args": {"name": "job"}, "save": "t"},
            {"op": "claim", "args": {"worker_id": "w1"}},
            {"op": "heartbeat", "args": {"id": "$t.id", "worker_id": "w2"}, "expectError": "LostLease", "save": "e"},
            {"op": "expect", "target": "$e.task_id", "equalsRef": "$t.id"},
            {"op": "expect", "target": "$e.type", "equalsRef": "LostLease", "notNull": []}
        ]}"#,
    )
    .await;
    assert!(out.passed(), "{out}");
}

#[tokio::test]
async fn an_error_that_was_not_expected_fails_the_step() {
    let out = outcome(
        r#"{"name": "unexpected", "steps": [
            {"op": "submit", "args": {"name": "job", "max_attempts": 0}}
        ]}"#,
    )
    .await;
    assert!(failure(&out).starts_with("steps[0] (submit): failed with ValidationError"), "{out}");
}

#[tokio::test]
async fn an_expected_error_that_does_not_happen_fails_the_step() {
    let out = outcome(
        r#"{"name": "no_error", "steps": [{"op": "submit", "args": {"name": "job"}, "expectError": "AlreadyExists"}]}"#,
    )
    .await;
    assert!(failure(&out).starts_with("steps[0] (submit): expectError AlreadyExists: the step succeeded"), "{out}");
    let out = outcome(
        r#"{"name": "other_error", "steps": [{"op": "submit", "args": {"name": ""}, "expectError": "LostLease"}]}"#,
    )
    .await;
    assert!(failure(&out).contains("expectError LostLease: failed with ValidationError instead"), "{out}");
}

#[tokio::test]
async fn broken_scenarios_fail_with_a_reason() {
    let cases = [
        (r#"{"op": "frobnicate"}"#, "unknown op `frobnicate`"),
        (r#"{"op": "claim", "args": {"lease": 5}}"#, "unknown argument `lease`"),
        (r#"{"op": "get", "args": {"id": "$nobody.id"}}"#, "no step saved `nobody`"),
        (r#"{"op": "get", "args": {}}"#, "missing required argument `id`"),
        (r#"{"op": "stats", "expect": {"equal": {}}}"#, "bad assertions"),
        (r#"{"op": "claim", "args": {"limit": "two"}, "expectError": "ValidationError"}"#, ""),
    ];
    for (step, reason) in cases {
        let out = outcome(&format!(r#"{{"name": "broken", "steps": [{step}]}}"#)).await;
        match reason {
            "" => assert!(out.passed(), "a mistyped argument is a ValidationError: {out}"),
            _ => assert!(failure(&out).contains(reason), "{step}: {out}"),
        }
    }
}

#[test]
fn misspelled_step_keys_are_refused_when_parsing() {
    let err = Scenario::parse(r#"{"name": "n", "steps": [{"op": "stats", "expected": {"length": 1}}]}"#)
        .expect_err("`expected` is not a step key");
    assert!(err.contains("unknown step key `expected`"), "{err}");
    assert!(Scenario::parse(r#"{"name": "n", "steps": [], "extra": 1}"#).is_err());
    let err = Scenario::parse(r#"{"name": "n", "steps": [{"op": "get", "target": "$t"}]}"#).expect_err("target on get");
    assert!(err.contains("`target` belongs to expect steps"), "{err}");
    let err = Scenario::parse(r#"{"name": "n", "steps": [{"op": "expect", "args": {}, "target": 1}]}"#)
        .expect_err("args on expect");
    assert!(err.contains("takes a `target`, not `args`"), "{err}");
}

#[test]
fn every_builtin_file_parses_and_is_named_after_its_file() {
    let builtin = scenario::builtin_scenarios();
    assert!(builtin.len() >= 45, "only {} built-in scenarios", builtin.len());
    for (file, parsed) in builtin {
        let scenario = parsed.unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(format!("{}.json", scenario.name), file);
        assert!(!scenario.description.is_empty(), "{file} has no description");
    }
}
