//! A server restart mid-use (`pg_ctl restart -m fast`): pooled connections
//! and the LISTEN connection die; the store reconnects and carries on.

use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Store, Wake};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::TestServer;
use serde_json::json;

use crate::wakeups::until_listening;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_reconnects_after_a_server_restart() {
    // A server of its own: restarting the shared one would cut every
    // other test's connections.
    let server = TestServer::private("restart").expect("start a private server");
    let store = PostgresStore::connect_with(server.dsn(), PostgresOptions::new().schema("restart").pool_size(2))
        .await
        .expect("connect");
    let client = CairnQ::new(store.clone());
    let before = client.submit("a", &json!(1)).await.expect("submit before");
    until_listening(&store).await;

    server.restart().expect("restart");

    let deadline = Instant::now() + Duration::from_secs(60);
    let after = loop {
        match client.submit("b", &json!(2)).await {
            Ok(task) => break task,
            Err(e) => {
                assert!(e.is_transient(), "a restart is reported as transient: {e}");
                assert!(Instant::now() < deadline, "no reconnect: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert!(client.get(&before.id).await.expect("get").is_some(), "the earlier task survived");
    assert!(client.get(&after.id).await.expect("get").is_some());

    until_listening(&store).await;
    let waiter = store.clone();
    let waiting = tokio::spawn(async move {
        let started = Instant::now();
        cairnq_core::store::wait_for_change(&waiter, &Wake::Queued(vec!["late".into()]), Duration::from_secs(60)).await;
        started.elapsed()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    client.submit("c", &json!(3)).queue("late").await.expect("submit after");
    assert!(waiting.await.expect("waiter") < Duration::from_secs(30), "wakeups flow again after reconnecting");
    store.close().await.expect("close");
    server.stop().expect("stop");
}
