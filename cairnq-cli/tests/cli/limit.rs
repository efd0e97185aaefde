//! `cairnq limit`: set (concurrency, rate with burst, a prefix default),
//! ls in every format, rm, `submit --limit-key`, and the refusals (a bad
//! key, rate or count, a burst without a rate, nothing to bound: exit 2,
//! nothing written; rm of a key with no limit: exit 3), on both backends;
//! and what `doctor` says about limits.

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{Limit, SubmitOptions, TaskSpec};
use serde_json::json;

use crate::support::Fixture;

async fn limits_through_the_binary(fixture: &Fixture) {
    let cli = &fixture.cli;
    let set = cli.json(&[
        "-o",
        "json",
        "limit",
        "set",
        "api:maps",
        "--concurrency",
        "5",
        "--rate",
        "100/1m",
        "--burst",
        "10",
    ]);
    assert_eq!(
        (set[0]["key"].clone(), set[0]["concurrency"].clone(), set[0]["rate_count"].clone()),
        (json!("api:maps"), json!(5), json!(100))
    );
    assert_eq!((set[0]["rate_period_ms"].clone(), set[0]["burst"].clone()), (json!(60_000), json!(10)));
    cli.json(&["-o", "json", "limit", "set", "tenant:*", "--concurrency", "2"]);
    cli.json(&["-o", "json", "limit", "set", "slow", "--rate", "20/s"]);

    let listed = cli.json(&["-o", "json", "limit", "ls"]);
    let keys: Vec<&str> = listed.as_array().expect("array").iter().filter_map(|l| l["key"].as_str()).collect();
    assert_eq!(keys, ["api:maps", "slow", "tenant:*"]);
    assert_eq!((listed[1]["rate_period_ms"].clone(), listed[1]["burst"].clone()), (json!(1000), json!(1)));
    assert_eq!(listed[2]["rate_count"], json!(null));
    assert_eq!(cli.run(&["-o", "jsonl", "limit", "ls"]).stdout.lines().count(), 3);
    let table = cli.run(&["limit", "ls"]);
    assert!(table.stdout.contains("tenant:*") && table.stdout.contains("100/1m"), "{}", table.stdout);
    let library: Vec<String> = fixture.client.limits().await.expect("read").into_iter().map(|l| l.limit.key).collect();
    assert_eq!(library, keys, "the binary and the library read the same rows");

    let task = cli.json(&["-o", "json", "submit", "bill", "--limit-key", "tenant:42", "--metadata", r#"{"a":1}"#]);
    assert_eq!(task["metadata"], json!({"a": 1, "limit_key": "tenant:42"}));
    cli.json(&["-o", "json", "submit", "bill", "--limit-key", "tenant:7"]);
    let tenants = &cli.json(&["-o", "json", "limit", "ls"])[2];
    assert_eq!((tenants["waiting"].clone(), tenants["running"].clone()), (json!(2), json!(0)), "{tenants}");
    assert_eq!((tenants["keys"].clone(), tenants["next_admit_ms"].clone()), (json!(2), json!(null)));
    let table = cli.run(&["limit", "ls"]);
    assert!(table.stdout.contains("WAITING") && table.stdout.contains("NEXT START"), "{}", table.stdout);

    assert_eq!(cli.json(&["-o", "json", "limit", "rm", "slow"]), json!({"removed": "slow"}));
    cli.run(&["limit", "rm", "slow"]).refused(3, "no limit slow");
    for (args, says) in [
        (vec!["a*b", "--concurrency", "1"], "key"),
        (vec!["k", "--concurrency", "0"], "concurrency"),
        (vec!["k", "--rate", "100"], "N/DURATION"),
        (vec!["k", "--rate", "0/1s"], "rate"),
        (vec!["k", "--rate", "5/soon"], "not a duration"),
        (vec!["k", "--concurrency", "1", "--burst", "2"], "--rate"),
        (vec!["k"], "--concurrency"),
    ] {
        let mut all = vec!["limit", "set"];
        all.extend(args);
        cli.run(&all).refused(2, says);
    }
    cli.run(&["submit", "bill", "--limit-key", "tenant:*"]).refused(2, "limit_key");
    cli.run(&["limit", "rm", "x*y"]).refused(2, "key");
    assert_eq!(fixture.client.limits().await.expect("read").len(), 2, "a refused command wrote nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn limit_commands_on_sqlite() {
    limits_through_the_binary(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn limit_commands_on_postgres() {
    limits_through_the_binary(&Fixture::postgres().await).await;
}

/// `doctor` lists the limits with their counts, and names a key running
/// more than its limit allows (here: claimed before the limit was set, as
/// a worker that does not enforce limits would claim them) as a problem.
async fn doctor_reports_limits_and_keys_over_them(fixture: &Fixture) {
    let cli = &fixture.cli;
    // Not its exit code: a shared test Postgres holds many installations,
    // a problem of its own.
    let doctor = || serde_json::from_str::<serde_json::Value>(&cli.run(&["-o", "json", "doctor"]).stdout);
    let none = doctor().expect("JSON");
    assert_eq!((none["limits"].clone(), none["over_limit"].clone()), (json!([]), json!([])), "{none}");
    assert!(!none["problems"].to_string().contains("limit"), "{none}");
    assert!(cli.run(&["doctor"]).stdout.contains("limits            none set"));

    let hot = SubmitOptions::new().limit_key("hot:1");
    let specs: Vec<TaskSpec> = (0..3).map(|_| TaskSpec::new("job", &json!({})).options(hot.clone())).collect();
    fixture.client.submit_many(&specs).await.expect("submit");
    let worker = fixture.client.worker_session("worker_unlimited", Duration::from_secs(600)).expect("a session");
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(2)], vec![]).await;
    assert_eq!(claimed.expect("claim").len(), 2, "no limit yet");
    fixture.client.set_limit(&Limit::new("hot:*").concurrency(1)).await.expect("set a limit");
    fixture.client.set_limit(&Limit::new("api").rate(10, Duration::from_secs(60))).await.expect("set a limit");

    let ran = cli.run(&["-o", "json", "doctor"]);
    assert_eq!(ran.code, 1, "a key over its limit is a problem: {}", ran.stderr);
    let report = doctor().expect("JSON");
    assert_eq!(
        report["over_limit"],
        json!([{"key": "hot:1", "limit": "hot:*", "running": 2, "concurrency": 1}]),
        "{report}"
    );
    let limits = report["limits"].as_array().expect("limits");
    assert_eq!(limits.iter().filter_map(|l| l["key"].as_str()).collect::<Vec<_>>(), ["api", "hot:*"]);
    assert_eq!((limits[1]["running"].clone(), limits[1]["waiting"].clone()), (json!(2), json!(1)));
    let problems = report["problems"].to_string();
    assert!(problems.contains(r#"key \"hot:1\" runs 2 task(s), over the 1 its limit \"hot:*\" allows"#), "{problems}");
    let table = cli.run(&["doctor"]).stdout;
    assert!(table.contains("limits            2: api (10/1m) 0 running, 0 waiting over 0 key(s)"), "{table}");
    assert!(table.contains("hot:* (concurrency 1) 2 running, 1 waiting over 1 key(s); 1 key(s) over"), "{table}");
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_reports_limits_on_sqlite() {
    doctor_reports_limits_and_keys_over_them(&Fixture::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn doctor_reports_limits_on_postgres() {
    doctor_reports_limits_and_keys_over_them(&Fixture::postgres().await).await;
}
