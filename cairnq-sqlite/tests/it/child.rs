//! What a child process does, chosen by `CAIRNQ_SQLITE_CHILD`.

use std::io::{BufRead, Write};

use cairnq_core::CairnQ;
use cairnq_sqlite::SqliteStore;

/// Printed before each acknowledged task id.
pub(crate) const ACK: &str = "ACK ";
/// Printed once the store is open and migrated.
pub(crate) const OPENED: &str = "OPENED";
/// Printed before the error of a failed open (mode `report_open`).
pub(crate) const OPEN_ERROR: &str = "OPEN_ERROR ";

pub(crate) async fn run_from_env() {
    let (Ok(mode), Ok(path)) = (std::env::var("CAIRNQ_SQLITE_CHILD"), std::env::var("CAIRNQ_SQLITE_PATH")) else {
        panic!("child_process_entry runs only as a child (CAIRNQ_SQLITE_CHILD and CAIRNQ_SQLITE_PATH unset)");
    };
    if mode == "report_open" {
        // On a line of its own: libtest has printed `test child_process_entry ... `.
        match SqliteStore::open(&path).await {
            Ok(_) => println!("\n{OPENED}"),
            Err(e) => println!("\n{OPEN_ERROR}{e}"),
        }
        return;
    }
    let store = SqliteStore::open(&path).await.expect("child opens the store");
    match mode.as_str() {
        "open" => println!("{OPENED}"),
        "submit_burst" => submit_burst(CairnQ::new(store)).await,
        "submit_on_go" => submit_on_go(CairnQ::new(store)).await,
        other => panic!("unknown child mode {other}"),
    }
}

/// Eight concurrent submitters (so writes share group commits) submit until
/// killed, each printing an id as soon as its submit returned.
async fn submit_burst(client: CairnQ) {
    let loops: Vec<_> = (0..8)
        .map(|lane| {
            let client = client.clone();
            tokio::spawn(async move {
                for n in 0..1_000_000u64 {
                    let task =
                        client.submit("burst", &serde_json::json!({ "lane": lane, "n": n })).await.expect("submit");
                    let mut out = std::io::stdout().lock();
                    writeln!(out, "{ACK}{}", task.id).expect("write ack");
                    out.flush().expect("flush ack");
                }
            })
        })
        .collect();
    for l in loops {
        l.await.expect("submit loop");
    }
}

/// Opens the store, says so, submits one task once a line arrives on
/// stdin, acknowledges it, and exits when stdin closes.
async fn submit_on_go(client: CairnQ) {
    println!("{OPENED}");
    let mut lines = std::io::stdin().lock().lines();
    lines.next().expect("a go-ahead line").expect("read stdin");
    let task = client.submit("ping", &serde_json::json!({})).await.expect("submit");
    println!("{ACK}{}", task.id);
    for _ in lines {}
    client.close().await.expect("close");
}
