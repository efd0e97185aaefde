//! Tasks the Python SDK submitted are visible to the binary, as the
//! library reads them.

use crate::support::{Fixture, as_json, peer};

async fn python_tasks_are_visible(fixture: Fixture, peer_db: String) {
    let submitted = peer(&["submit", &peer_db, "from_python", r#"{"n": 1, "s": "héllo"}"#]);
    let id = submitted["id"].as_str().expect("the peer printed the task");
    let cli = &fixture.cli;
    let got = cli.json(&["-o", "json", "get", "--key", "py-key-from_python"]);
    assert_eq!(got, as_json(&fixture.client.get(id).await.expect("get")));
    assert_eq!(got["metadata"]["from"], "python");
    let table = cli.run(&["list", "--name", "from_python"]);
    assert!(table.stdout.contains(id) && table.stdout.contains("queued"), "{}", table.stdout);
}

#[tokio::test(flavor = "multi_thread")]
async fn on_sqlite() {
    let fixture = Fixture::sqlite().await;
    let db = fixture.cli.db.clone();
    python_tasks_are_visible(fixture, db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn on_postgres() {
    let fixture = Fixture::postgres().await;
    let db = format!("{}#schema={}", fixture.cli.db, fixture.cli.schema.clone().unwrap_or_default());
    python_tasks_are_visible(fixture, db).await;
}
