//! `Install::Existing` and the read-only ledger: they use an installation
//! as it is and never create a schema, ledger or table.

use cairnq_core::{Error, Install};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::fresh_schema_name;

use crate::support::{count, dsn, fresh, raw};

#[tokio::test]
async fn existing_refuses_a_schema_without_an_installation_and_creates_nothing() {
    let schema = fresh_schema_name();
    let options = PostgresOptions::new().schema(&schema).pool_size(1).listen(false);
    match PostgresStore::connect_with(&dsn(), options.clone().install(Install::Existing)).await {
        Err(Error::Unusable { message, .. }) => assert!(message.contains("no cairnq installation"), "{message}"),
        other => panic!("expected Unusable, got {other:?}"),
    }
    let ledger = PostgresStore::migrations(&dsn(), options).await.expect("ledger of nothing");
    assert!(!ledger.is_empty() && ledger.iter().all(|m| !m.is_applied()));
    let sql = format!("select count(*) from pg_namespace where nspname = '{schema}'");
    assert_eq!(count(&raw(&dsn()).await, &sql).await, 0, "no schema was created");
}

#[tokio::test]
async fn existing_uses_an_installed_schema_and_the_ledger_reads_applied() {
    let (installed, schema) = fresh().await;
    drop(installed);
    let options = PostgresOptions::new().schema(&schema).pool_size(1).install(Install::Existing);
    let store = PostgresStore::connect_with(&dsn(), options.clone()).await.expect("existing");
    let client = cairnq_core::CairnQ::new(store);
    let task = client.submit("resize", &serde_json::json!({})).await.expect("writes work");
    assert!(client.get(&task.id).await.expect("get").is_some());
    let ledger = PostgresStore::migrations(&dsn(), options.clone()).await.expect("ledger");
    assert!(ledger.iter().all(|m| m.is_applied()), "{ledger:?}");
    let schemas = PostgresStore::installations(&dsn(), options).await.expect("installations");
    assert!(schemas.contains(&schema), "{schemas:?}");
}
