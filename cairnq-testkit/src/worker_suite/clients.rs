//! What clients see of a store that the JSON scenarios cannot show: calls
//! on a closed store, a batch refused whole, producers and claimers racing
//! each other, and a submitting process killed mid-burst. Every backend
//! must behave the same here, so these live in the shared suite rather
//! than in each backend's own tests.

use std::collections::HashSet;
use std::time::Duration;

use cairnq_core::store::{ClaimDraw, ListFilter};
use cairnq_core::{CairnQ, Conflict, ErrorKind, SubmitOptions, TaskSpec, TaskStatus};
use serde_json::json;

use super::support::{count, fresh, session};
use crate::BackendFactory;
use crate::child::{ChildArgs, ChildMode, ChildProcess, open_store};

/// Every row of a store, whatever its status.
async fn total(client: &CairnQ) -> u64 {
    let stats = client.stats(None).await.expect("stats");
    stats.values().map(|c| c.queued + c.running + c.succeeded + c.failed + c.canceled).sum()
}

/// Once closed, a store refuses reads and writes alike with `StoreClosed`.
pub async fn a_closed_store_refuses_every_call(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let task = client.submit("job", &json!({})).await.expect("submit while open");
    client.close().await.expect("close");
    let kind = |result: Result<(), cairnq_core::Error>| result.err().map(|e| e.kind());
    let closed = Some(ErrorKind::StoreClosed);
    assert_eq!(kind(client.submit("job", &json!({})).await.map(drop)), closed, "submit");
    let specs = [TaskSpec::new("job", &json!(1))];
    assert_eq!(kind(client.submit_many(&specs).await.map(drop)), closed, "submit_many");
    assert_eq!(kind(client.get(&task.id).await.map(drop)), closed, "get");
    assert_eq!(kind(client.list(&ListFilter::new()).await.map(drop)), closed, "list");
    assert_eq!(kind(client.stats(None).await.map(drop)), closed, "stats");
    assert_eq!(kind(client.cancel(&task.id).await.map(drop)), closed, "cancel");
    let worker = session(&client, "w", Duration::from_secs(30));
    let claim = worker.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(1)], vec![]).await;
    assert_eq!(kind(claim.map(drop)), closed, "claim");
}

/// `submit_many` writes every task or none: an invalid item anywhere is
/// refused before the first write, and a `reject` conflict on the last
/// item, found after the others were inserted in the same transaction,
/// undoes them too.
pub async fn submit_many_is_all_or_nothing(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let seed = client.submit("seed", &json!({})).key("taken").await.expect("seed");
    let ok = |n: i64| TaskSpec::new("batch", &json!(n));
    let refused = |specs: &[TaskSpec]| {
        let client = client.clone();
        let specs = specs.to_vec();
        async move { client.submit_many(&specs).await.err().map(|e| e.kind()) }
    };
    let empty_name = [ok(1), TaskSpec::new("", &json!(2))];
    assert_eq!(refused(&empty_name).await, Some(ErrorKind::ValidationError));
    let nan = [ok(1), TaskSpec::new("batch", &f64::NAN), ok(3)];
    assert_eq!(refused(&nan).await, Some(ErrorKind::SerializationError));
    // A refusal found mid-transaction, after a new key was set and the
    // seed was replaced: neither stays.
    let keyed = |key: &str, conflict| SubmitOptions::new().key(key).conflict(conflict);
    let conflict = [
        ok(1),
        TaskSpec::new("batch", &json!(2)).options(keyed("fresh", Conflict::Reuse)),
        TaskSpec::new("batch", &json!(3)).options(keyed("taken", Conflict::Replace)),
        TaskSpec::new("batch", &json!(4)).options(keyed("taken", Conflict::Reject)),
    ];
    assert_eq!(refused(&conflict).await, Some(ErrorKind::AlreadyExists));
    assert_eq!(total(&client).await, 1, "a refused batch wrote nothing: only the seed is there");
    assert!(client.get_by_key("fresh").await.expect("get_by_key").is_none(), "the key the refused call set is gone");
    let kept = client.get_by_key("taken").await.expect("get_by_key").expect("the seed keeps its key");
    assert_eq!((kept.id, kept.status), (seed.id, TaskStatus::Queued), "the replace was undone");

    let written = client.submit_many(&[ok(1), ok(2), ok(3)]).await.expect("a valid batch");
    let payloads: Vec<_> = written.iter().map(|t| t.payload.clone()).collect();
    assert_eq!(payloads, [json!(1), json!(2), json!(3)], "every task, in the order given");
    assert_eq!(total(&client).await, 4);
}

/// Four producers submit 1,000 keyed tasks each over 100 keys (with the
/// default `reuse`), each through a store of its own when another
/// connection can open the database: every key ends with exactly one live
/// task, and no key was ever given a second one.
pub async fn keyed_submits_from_concurrent_producers_keep_one_live_task_per_key(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let mut producers = Vec::new();
    for producer in 0..4 {
        let own = match &fresh.locator {
            Some(locator) => CairnQ::from_shared(open_store(locator).await.expect("open the store again")),
            None => client.clone(),
        };
        producers.push(tokio::spawn(async move {
            for n in 0..1_000 {
                let key = format!("key-{}", (n * 7 + producer) % 100);
                own.submit("keyed", &json!({ "n": n })).key(&key).await.expect("keyed submit");
            }
        }));
    }
    for producer in producers {
        producer.await.expect("producer");
    }
    assert_eq!(total(&client).await, 100, "reuse never inserts twice");
    assert_eq!(count(&client, TaskStatus::Queued).await, 100);
    let mut ids = HashSet::new();
    for key in 0..100 {
        let task = client.get_by_key(&format!("key-{key}")).await.expect("get_by_key").expect("the key's task");
        assert_eq!(task.status, TaskStatus::Queued);
        ids.insert(task.id);
    }
    assert_eq!(ids.len(), 100, "every key points at its own task");
}

/// Four claimers drawing three at a time from 60 tasks: every task is
/// claimed exactly once.
pub async fn concurrent_claimers_never_take_the_same_row(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let specs: Vec<_> = (0..60).map(|i| TaskSpec::new("job", &json!(i))).collect();
    client.submit_many(&specs).await.expect("submit_many");
    let claimers: Vec<_> = (0..4)
        .map(|n| {
            let client = client.clone();
            tokio::spawn(async move {
                let claimer = session(&client, &format!("w{n}"), Duration::from_secs(30));
                let mut mine = Vec::new();
                loop {
                    let got = claimer
                        .claim(vec![ClaimDraw::new(vec!["default".into()]).limit(3)], vec![])
                        .await
                        .expect("claim");
                    if got.is_empty() {
                        return mine;
                    }
                    mine.extend(got.into_iter().map(|t| t.id));
                }
            })
        })
        .collect();
    let mut ids = Vec::new();
    for claimer in claimers {
        ids.extend(claimer.await.expect("claimer"));
    }
    assert_eq!(ids.len(), 60, "every task claimed");
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), 60, "no task claimed twice");
}

/// A process submitting from eight tasks at once is SIGKILLed mid-burst:
/// every submit it had acknowledged is in the store. Skipped (with a
/// message) when the factory gives no locator.
pub async fn a_killed_submitter_loses_no_acknowledged_submit(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        return eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
    };
    let mut child = ChildProcess::spawn(&ChildArgs::new(locator, ChildMode::SubmitBurst)).expect("start the child");
    let acked_id = |line: &str| line.strip_prefix("ack ").map(str::to_string);
    let mut acked = Vec::new();
    while acked.len() < 300 {
        let line = child.line_starting("ack ", Duration::from_secs(60)).await.expect("the child acknowledges");
        acked.extend(acked_id(&line));
    }
    // SIGKILL: no destructor, no flush, no commit.
    child.kill().expect("SIGKILL the child");
    // Acknowledgements printed before it died are still in the pipe.
    acked.extend(child.rest().await.iter().filter_map(|line| acked_id(line)));
    let mut missing = Vec::new();
    for id in &acked {
        if client.get(id).await.expect("get").is_none() {
            missing.push(id.clone());
        }
    }
    assert!(missing.is_empty(), "{} of {} acknowledged ids are missing: {missing:?}", missing.len(), acked.len());
    assert!(total(&client).await >= acked.len() as u64);
}
