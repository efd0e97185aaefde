//! Flow control on every backend (extension `ext_0006_limits`): limits as
//! data through the client, a task's limit key, and what claims admit under
//! them, from single claims read exactly to a fleet of workers draining
//! limited keys while every run is timed.

use std::collections::BTreeMap;
use std::time::Duration;

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{CairnQ, Error, Limit, SubmitOptions, Task, TaskSpec};
use serde_json::json;

use super::support::fresh;
use crate::BackendFactory;
use crate::support::ByParams;

/// Limits round-trip through the client: set (create, then replace), read
/// (all, by key; prefix defaults by their own key), remove; bad limits and
/// bad task keys are refused with the field named and write nothing; a
/// submit's limit key lands in its metadata beside the caller's.
pub async fn limits_are_set_read_and_removed(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    assert!(client.limits().await.expect("read limits").is_empty());
    let api = Limit::new("api:maps").concurrency(5).rate(100, Duration::from_secs(60)).burst(10);
    let tenants = Limit::new("tenant:*").concurrency(2);
    let stored = client.set_limit(&api).await.expect("set a limit");
    assert_eq!(stored.limit, api);
    assert!(stored.updated_at_ms > 0, "stamped with the store's clock");
    client.set_limit(&tenants).await.expect("set a prefix default");
    let all = client.limits().await.expect("read limits");
    assert_eq!(all.iter().map(|l| l.limit.clone()).collect::<Vec<_>>(), [api.clone(), tenants.clone()]);
    assert_eq!(client.limit("tenant:*").await.expect("read one").map(|l| l.limit), Some(tenants.clone()));
    assert_eq!(client.limit("tenant:42").await.expect("read one"), None, "read by the stored key only");

    let lowered = Limit::new("api:maps").concurrency(1);
    client.set_limit(&lowered).await.expect("replace a limit");
    assert_eq!(client.limit("api:maps").await.expect("read one").map(|l| l.limit), Some(lowered));

    for (bad, field) in [
        (Limit::new("a*b").concurrency(1), "key"),
        (Limit::new("fresh").concurrency(0), "concurrency"),
        (Limit::new("fresh").concurrency(1).burst(3), "burst"),
        (Limit::new("fresh"), "limit"),
    ] {
        match client.set_limit(&bad).await {
            Err(Error::Validation { field: got, .. }) => assert_eq!(got, field, "{bad:?}"),
            other => panic!("{bad:?} was not refused: {other:?}"),
        }
    }
    assert_eq!(client.limits().await.expect("read limits").len(), 2, "a refused limit writes nothing");

    assert!(client.remove_limit("api:maps").await.expect("remove"));
    assert!(!client.remove_limit("api:maps").await.expect("remove again"), "nothing left to remove");
    assert_eq!(client.limit("api:maps").await.expect("read one"), None);

    let task = client
        .submit("bill", &json!({}))
        .metadata(json!({"region": "eu", "limit_key": "old"}))
        .limit_key("tenant:7")
        .await
        .expect("submit with a limit key");
    let read = client.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!(read.limit_key().as_deref(), Some("tenant:7"));
    assert_eq!(read.metadata.to_value().expect("JSON"), json!({"region": "eu", "limit_key": "tenant:7"}));
    for bad in ["tenant:*", "", &"k".repeat(201)] {
        let refused = client.submit("bill", &json!({})).limit_key(bad).await;
        assert!(matches!(refused, Err(Error::Validation { field: "limit_key", .. })), "{bad:?}: {refused:?}");
    }
}

/// How many of `tasks` carry each limit key (`-` for none), sorted.
fn by_key(tasks: &[Task]) -> Vec<(String, usize)> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for task in tasks {
        *counts.entry(task.limit_key().unwrap_or_else(|| "-".into())).or_default() += 1;
    }
    counts.into_iter().collect()
}

fn keyed(key: &str, priority: i32, n: usize) -> Vec<TaskSpec> {
    let options = SubmitOptions::new().priority(priority);
    let options = if key == "-" { options } else { options.limit_key(key) };
    (0..n).map(|i| TaskSpec::new("job", &i).options(options.clone())).collect()
}

async fn claim(client: &CairnQ, n: u32) -> Vec<Task> {
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["job".into()]).limit(n);
    client.claim(&ClaimParams::new("worker_limits", 60_000).draw(draw)).await.expect("claim")
}

async fn complete(client: &CairnQ, task: &Task) {
    client.complete(&SettleParams::new(&task.id, "worker_limits")).await.expect("complete");
}

fn owned(pairs: &[(&str, usize)]) -> Vec<(String, usize)> {
    pairs.iter().map(|(k, n)| ((*k).to_string(), *n)).collect()
}

/// Single claims, read exactly: a key at its concurrency is skipped, not
/// waited on (the claim takes lower-priority work of other keys and
/// unlimited tasks instead); a prefix default limits each matching key
/// separately while an exact limit wins over it; a finished task frees its
/// slot; a lowered limit starts nothing until the count is under it; a
/// removed limit lifts it; a rate admits its burst, then nothing however
/// many finish.
pub async fn a_claim_admits_what_each_limit_allows(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    for limit in [
        Limit::new("a").concurrency(2),
        Limit::new("t:*").concurrency(1),
        Limit::new("t:vip").concurrency(3),
        Limit::new("r").rate(2, Duration::from_secs(3_600)).burst(2),
    ] {
        client.set_limit(&limit).await.expect("set a limit");
    }
    let mut specs = keyed("a", 9, 5);
    for (key, n) in [("t:1", 3), ("t:2", 3), ("t:vip", 4), ("-", 3), ("free", 2), ("r", 4)] {
        specs.extend(keyed(key, 0, n));
    }
    client.submit_many(&specs).await.expect("submit");

    let first = claim(&client, 2).await;
    assert_eq!(by_key(&first), owned(&[("a", 2)]), "priority order among what may start");
    let second = claim(&client, 100).await;
    let expected = [("-", 3), ("free", 2), ("r", 2), ("t:1", 1), ("t:2", 1), ("t:vip", 3)];
    assert_eq!(by_key(&second), owned(&expected), "saturated keys skipped, the rest taken");
    assert!(claim(&client, 100).await.is_empty(), "every key is at its limit");

    complete(&client, &first[0]).await;
    let freed = claim(&client, 100).await;
    assert_eq!(by_key(&freed), owned(&[("a", 1)]), "a finished task frees one slot");

    client.set_limit(&Limit::new("a").concurrency(1)).await.expect("lower the limit");
    assert!(claim(&client, 100).await.is_empty(), "2 run, 1 allowed");
    complete(&client, &first[1]).await;
    assert!(claim(&client, 100).await.is_empty(), "1 runs, 1 allowed");
    complete(&client, &freed[0]).await;
    assert_eq!(by_key(&claim(&client, 100).await), owned(&[("a", 1)]), "under the lowered limit again");

    for task in second.iter().filter(|t| t.limit_key().as_deref() == Some("r")) {
        complete(&client, task).await;
    }
    assert!(claim(&client, 100).await.is_empty(), "the rate, not the count, holds r back");

    assert!(client.remove_limit("a").await.expect("remove"));
    assert_eq!(by_key(&claim(&client, 100).await), owned(&[("a", 1)]), "the last a starts once unlimited");
}

/// Fair share while any limit is set: within one priority the keys of a
/// queue take turns in a claim (tasks without a key as one more key, first),
/// so a key with a large backlog and a key with a few tasks both progress;
/// a higher priority still goes first, and a key's own tasks go oldest
/// first.
pub async fn keys_take_turns_within_a_priority(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("elsewhere").concurrency(1)).await.expect("any limit turns the walk on");
    let mut specs = keyed("A", 0, 100);
    for (key, priority, n) in [("B", 0, 3), ("-", 0, 2), ("C", 1, 2)] {
        specs.extend(keyed(key, priority, n));
    }
    let submitted = client.submit_many(&specs).await.expect("submit");
    let first = claim(&client, 8).await;
    assert_eq!(by_key(&first), owned(&[("-", 2), ("A", 2), ("B", 2), ("C", 2)]), "C's priority, then turns");
    let second = claim(&client, 8).await;
    assert_eq!(by_key(&second), owned(&[("A", 7), ("B", 1)]), "B's last task gets its turn");
    // Claim order within a key: run_at_ms, then id (ids are not monotonic
    // within one millisecond).
    let in_claim_order = |tasks: &mut Vec<&Task>| tasks.sort_by(|a, b| (a.run_at_ms, &a.id).cmp(&(b.run_at_ms, &b.id)));
    let mut a_all: Vec<&Task> = submitted.iter().filter(|t| t.limit_key().as_deref() == Some("A")).collect();
    let mut a_taken: Vec<&Task> =
        first.iter().chain(&second).filter(|t| t.limit_key().as_deref() == Some("A")).collect();
    in_claim_order(&mut a_all);
    in_claim_order(&mut a_taken);
    let ids = |tasks: &[&Task]| tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&a_taken), ids(&a_all[..9]), "a key's oldest tasks first");
}

/// A draw over several queues (which walks claim order rather than the
/// per-queue groups) admits by the same limits: a key counts its running
/// rows on every queue.
pub async fn a_draw_over_several_queues_admits_by_the_same_limits(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("k").concurrency(2)).await.expect("set a limit");
    let on = |queue: &str, key: &str, n: usize| {
        let options = SubmitOptions::new().queue(queue);
        let options = if key == "-" { options } else { options.limit_key(key) };
        (0..n).map(move |i| TaskSpec::new("job", &i).options(options.clone())).collect::<Vec<_>>()
    };
    let specs: Vec<TaskSpec> = [on("q1", "k", 3), on("q2", "k", 3), on("q2", "-", 2)].concat();
    client.submit_many(&specs).await.expect("submit");
    let one = ClaimDraw::new(vec!["q1".into()]).names(vec!["job".into()]).limit(1);
    let held = client.claim(&ClaimParams::new("worker_limits", 60_000).draw(one)).await.expect("claim on q1");
    assert_eq!(by_key(&held), owned(&[("k", 1)]));
    let both = ClaimDraw::new(vec!["q1".into(), "q2".into()]).names(vec!["job".into()]).limit(10);
    let both = ClaimParams::new("worker_limits", 60_000).draw(both);
    assert_eq!(by_key(&client.claim(&both).await.expect("claim")), owned(&[("-", 2), ("k", 1)]), "one slot left");
    assert!(client.claim(&both).await.expect("claim").is_empty());
    complete(&client, &held[0]).await;
    assert_eq!(by_key(&client.claim(&both).await.expect("claim")), owned(&[("k", 1)]));
}

/// What each limit governs now: a prefix default sums the running and
/// waiting tasks of its keys; a rate says when it next admits (an hour on,
/// once its burst of 1 started a task).
pub async fn limit_statuses_count_what_runs_and_waits(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    client.set_limit(&Limit::new("t:*").concurrency(1)).await.expect("set a limit");
    client.set_limit(&Limit::new("api").rate(1, Duration::from_secs(3_600))).await.expect("set a limit");
    let mut specs = keyed("t:1", 0, 3);
    for (key, n) in [("t:2", 2), ("api", 2), ("-", 1)] {
        specs.extend(keyed(key, 0, n));
    }
    client.submit_many(&specs).await.expect("submit");
    let started = claim(&client, 100).await;
    assert_eq!(by_key(&started), owned(&[("-", 1), ("api", 1), ("t:1", 1), ("t:2", 1)]));
    let statuses = client.limit_statuses().await.expect("read statuses");
    let keys: Vec<&str> = statuses.iter().map(|s| s.info.limit.key.as_str()).collect();
    assert_eq!(keys, ["api", "t:*"]);
    let (api, tenants) = (&statuses[0], &statuses[1]);
    assert_eq!((api.running, api.waiting, api.keys), (1, 1, 1));
    let next = api.next_admit_ms.expect("a rate says when it admits");
    let started_at = started.iter().map(|t| t.updated_at_ms).max().expect("claimed");
    assert!(next >= started_at + 3_599_000, "the next start an hour on: {next} after {started_at}");
    assert_eq!((tenants.running, tenants.waiting, tenants.keys, tenants.next_admit_ms), (2, 3, 2, None));
}
