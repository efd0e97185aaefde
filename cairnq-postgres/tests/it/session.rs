//! Settling inside the application's own transaction.

use cairnq_core::store::{ClaimDraw, ClaimParams, SettleParams};
use cairnq_core::{ErrorKind, Store, TaskStatus};
use serde_json::json;

use crate::support::{count, dsn, fresh_client, raw};

/// The application's session: its own connection, reaching the cairnq
/// tables through its search_path, with a table of its own.
async fn app_session(schema: &str) -> tokio_postgres::Client {
    let app = raw(&dsn()).await;
    let setup = format!("set search_path to {schema}; create table invoices (task_id text primary key)");
    app.batch_execute(&setup).await.expect("app setup");
    app
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn complete_in_settles_with_the_applications_transaction() {
    let (client, store, schema) = fresh_client().await;
    let task = client.submit("bill", &json!({})).await.expect("submit");
    store
        .claim(&ClaimParams::new("w", 30_000).draw(ClaimDraw::new(vec!["default".into()]).limit(1)))
        .await
        .expect("claim");
    let mut app = app_session(&schema).await;
    let settle = SettleParams::new(&task.id, "w").result(json!({"billed": true}));

    let tx = app.transaction().await.expect("begin");
    tx.execute("insert into invoices values ($1)", &[&task.id]).await.expect("insert");
    let inside = store.complete_in(&tx, &settle).await.expect("complete_in");
    assert_eq!(inside.status, TaskStatus::Succeeded, "seen as settled inside the transaction");
    tx.rollback().await.expect("rollback");
    let after_rollback = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!(after_rollback.status, TaskStatus::Running, "a rolled-back transaction settles nothing");
    assert_eq!(count(&app, "select count(*) from invoices").await, 0);

    let tx = app.transaction().await.expect("begin");
    tx.execute("insert into invoices values ($1)", &[&task.id]).await.expect("insert");
    store.complete_in(&tx, &settle).await.expect("complete_in");
    tx.commit().await.expect("commit");
    let committed = client.get(&task.id).await.expect("get").expect("row");
    assert_eq!((committed.status, committed.result), (TaskStatus::Succeeded, Some(json!({"billed": true}).into())));
    assert_eq!(count(&app, "select count(*) from invoices").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn succeed_in_without_the_lease_is_lost_lease() {
    let (client, store, schema) = fresh_client().await;
    let task = client.submit("bill", &json!({})).await.expect("submit");
    let app = app_session(&schema).await;
    let err =
        store.succeed_in(&app, &SettleParams::new(&task.id, "w").result(json!(1))).await.expect_err("not claimed");
    assert_eq!(err.kind(), ErrorKind::LostLease, "{err}");
    store
        .claim(&ClaimParams::new("w", 30_000).draw(ClaimDraw::new(vec!["default".into()]).limit(1)))
        .await
        .expect("claim");
    let done = store.succeed_in(&app, &SettleParams::new(&task.id, "w").result(json!(1))).await.expect("succeed_in");
    assert_eq!(done.status, TaskStatus::Succeeded);
}
