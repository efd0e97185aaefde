//! Every JSON value a caller stores (payload, metadata, result, error
//! details) reads back equal by value, whoever wrote it and whoever reads
//! it: random documents through both backends, and through the Python peer
//! in both directions. Integers beyond 64 bits, shortest-form floats from
//! random bit patterns, subnormals and `-0.0` included (Postgres `numeric`
//! has no negative zero, so there `-0.0` reads back as `0.0`, for every
//! SDK alike).
//!
//! Each run draws new documents from a seed it prints; set
//! `CAIRNQ_JSON_SEED` to replay one.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, Json, SubmitOptions, Task, TaskSpec};
use cairnq_sqlite::SqliteStore;
use cairnq_testkit::support::session;
use serde_json::value::RawValue;

use crate::random_json::{Canon, Docs, Zero};
use crate::support::peer;

const DOCS: usize = 120;

fn docs() -> (u64, Vec<String>) {
    let seed = std::env::var("CAIRNQ_JSON_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    eprintln!("random JSON documents from CAIRNQ_JSON_SEED={seed}");
    let mut source = Docs::new(seed);
    // A bare `null` is left out: the Python SDK stores a payload of None as
    // `{}` (its "no payload"), so it cannot round-trip through that API.
    let docs = std::iter::repeat_with(|| source.doc(3)).filter(|doc| doc != "null").take(DOCS).collect();
    (seed, docs)
}

/// The text under `key` of a JSON object's text.
fn field(text: &str, key: &str) -> String {
    let map: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text).expect("an object");
    map.get(key).map(|v| v.get().to_string()).unwrap_or_else(|| panic!("no {key} in {text}"))
}

fn json(text: &str) -> Json {
    Json::parse(text.to_string()).expect("a generated document is JSON")
}

/// Compares documents by value; the seed in the message replays a failure.
struct Check {
    seed: u64,
    zero: Zero,
    /// Who wrote and who read, for the message.
    phase: std::cell::Cell<&'static str>,
}

impl Check {
    fn same(&self, what: &str, wrote: &str, read: &str) {
        let (a, b) = (Canon::of(wrote, self.zero), Canon::of(read, self.zero));
        let (seed, phase) = (self.seed, self.phase.get());
        assert!(a.is_some() && a == b, "{what} changed, {phase} (seed {seed}):\n wrote {wrote}\n  read {read}");
    }

    /// Payload and metadata of a task hold `doc`.
    fn submitted(&self, doc: &str, payload: &str, metadata: &str) {
        self.same("payload", doc, payload);
        self.same("metadata", doc, &field(metadata, "m"));
    }

    /// Task `i` was settled by [`settle_all`] with `doc`.
    fn settled(&self, i: usize, doc: &str, result: Option<&str>, error: Option<&str>) {
        match (i % 2, result, error) {
            (0, Some(result), _) => self.same("result", doc, result),
            (1, _, Some(error)) => self.same("error details", doc, &field(&field(error, "details"), "d")),
            other => panic!("task {i} was not settled as expected: {other:?}"),
        }
    }
}

/// Submits every document (payload, and metadata `{"m": doc}`), returning
/// the task ids in order.
async fn submit_all(client: &CairnQ, docs: &[String]) -> Vec<String> {
    let specs: Vec<TaskSpec> = docs
        .iter()
        .map(|doc| {
            let options = SubmitOptions::new().metadata(json(&format!("{{\"m\":{doc}}}")));
            TaskSpec::new("doc", &json(doc)).options(options)
        })
        .collect();
    client.submit_many(&specs).await.expect("submit_many").into_iter().map(|t| t.id).collect()
}

/// Claims every task and settles task i with document i: even ones
/// complete with it as the result, odd ones fail with it as the envelope's
/// `details.d`.
async fn settle_all(client: &CairnQ, ids: &[String], docs: &[String]) {
    let limit = u32::try_from(ids.len()).unwrap_or(u32::MAX);
    let worker = session(client, "w", Duration::from_secs(60));
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(limit)], vec![]).await;
    assert_eq!(claimed.expect("claim").len(), ids.len());
    for (i, (id, doc)) in ids.iter().zip(docs).enumerate() {
        if i % 2 == 0 {
            worker.complete(id, json(doc)).await.expect("complete");
        } else {
            let envelope =
                format!(r#"{{"type":"Doc","code":"doc","message":"m","retryable":false,"details":{{"d":{doc}}}}}"#);
            worker.fail(id, json(&envelope), None).await.expect("fail");
        }
    }
}

async fn read(client: &CairnQ, id: &str) -> Task {
    client.get(id).await.expect("get").expect("the task exists")
}

/// Rust writes, Rust reads.
async fn round_trip(client: &CairnQ, check: &Check, docs: &[String]) {
    check.phase.set("Rust wrote, Rust read");
    let ids = submit_all(client, docs).await;
    settle_all(client, &ids, docs).await;
    for (i, (id, doc)) in ids.iter().zip(docs).enumerate() {
        let task = read(client, id).await;
        check.submitted(doc, task.payload.as_str(), task.metadata.as_str());
        check.settled(i, doc, task.result.as_ref().map(Json::as_str), task.error.as_ref().map(Json::as_str));
    }
}

/// Python writes (payload, metadata), Rust reads and settles, Python reads
/// the settlements; then Rust writes, Python reads and completes each task
/// with its own payload, Rust reads the results.
async fn across_languages(python_db: &str, rust_client: &CairnQ, dir: &Path, check: &Check, docs: &[String]) {
    let docs_file = dir.join("docs.jsonl");
    std::fs::write(&docs_file, docs.join("\n")).expect("write docs");
    check.phase.set("Python wrote, Rust read");
    let ids = peer(&["submit-docs", python_db, docs_file.to_str().expect("utf-8 path")]);
    let ids: Vec<String> = ids.as_array().expect("ids").iter().filter_map(|v| v.as_str().map(str::to_string)).collect();
    for (id, doc) in ids.iter().zip(docs) {
        let task = read(rust_client, id).await;
        check.submitted(doc, task.payload.as_str(), task.metadata.as_str());
    }
    settle_all(rust_client, &ids, docs).await;
    check.phase.set("Rust wrote, Python read");
    for (i, (row, doc)) in python_rows(python_db, dir, &ids).into_iter().zip(docs).enumerate() {
        check.settled(i, doc, row[2].as_deref(), row[3].as_deref());
    }

    let mine = submit_all(rust_client, docs).await;
    for (row, doc) in python_rows(python_db, dir, &mine).into_iter().zip(docs) {
        check.submitted(doc, row[0].as_deref().unwrap_or("null"), row[1].as_deref().unwrap_or("{}"));
    }
    peer(&["echo-docs", python_db, &mine.len().to_string()]);
    check.phase.set("Python wrote, Rust read");
    for (id, doc) in mine.iter().zip(docs) {
        let result = read(rust_client, id).await.result.expect("Python completed it");
        check.same("result written by Python", doc, result.as_str());
    }
}

/// What the Python peer reads for each id: payload, metadata, result and
/// error as JSON text.
fn python_rows(python_db: &str, dir: &Path, ids: &[String]) -> Vec<Vec<Option<String>>> {
    let ids_file = dir.join("ids.txt");
    std::fs::write(&ids_file, ids.join("\n")).expect("write ids");
    let rows = peer(&["read-docs", python_db, ids_file.to_str().expect("utf-8 path")]);
    let rows = rows.as_array().expect("rows");
    rows.iter()
        .map(|row| row.as_array().expect("a row").iter().map(|c| c.as_str().map(str::to_string)).collect())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_documents_read_back_by_value_on_sqlite_and_across_languages() {
    let (seed, docs) = docs();
    let check = Check { seed, zero: Zero::Signed, phase: std::cell::Cell::new("") };
    let dir = tempfile::tempdir().expect("temp dir");
    let own = CairnQ::new(SqliteStore::open(dir.path().join("own.db")).await.expect("open"));
    round_trip(&own, &check, &docs).await;
    let shared = dir.path().join("shared.db");
    let client = CairnQ::new(SqliteStore::open(&shared).await.expect("open"));
    across_languages(shared.to_str().expect("utf-8 path"), &client, dir.path(), &check, &docs).await;
    client.close().await.expect("close");
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_documents_read_back_by_value_on_postgres_and_across_languages() {
    use cairnq_postgres::{PostgresOptions, PostgresStore};
    use cairnq_testkit::postgres::{fresh_schema_name, test_dsn};

    let (seed, docs) = docs();
    let check = Check { seed, zero: Zero::Unsigned, phase: std::cell::Cell::new("") };
    let dsn = test_dsn().expect("a test Postgres server");
    let connect = |schema: String| {
        let dsn = dsn.clone();
        async move {
            let store =
                PostgresStore::connect_with(&dsn, PostgresOptions::new().schema(&schema)).await.expect("connect");
            CairnQ::new(store)
        }
    };
    round_trip(&connect(fresh_schema_name()).await, &check, &docs).await;
    let schema = fresh_schema_name();
    let client = connect(schema.clone()).await;
    let dir = tempfile::tempdir().expect("temp dir");
    across_languages(&format!("{dsn}#schema={schema}"), &client, dir.path(), &check, &docs).await;
    client.close().await.expect("close");
}
