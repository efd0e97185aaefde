//! TLS (the `tls` feature): a private server with a self-signed certificate
//! for 127.0.0.1; trusted, the store connects over TLS; untrusted, it is
//! refused.

use std::process::Command;

use cairnq_core::{CairnQ, ErrorKind};
use cairnq_postgres::{PostgresOptions, PostgresStore};
use cairnq_testkit::postgres::TestServer;
use serde_json::json;

use crate::support::raw;

/// Writes a self-signed certificate and key for 127.0.0.1 into `dir`, owned
/// by the server's user, and returns the certificate (PEM).
fn self_signed(dir: &std::path::Path) -> Vec<u8> {
    let (cert, key) = (dir.join("server.crt").display().to_string(), dir.join("server.key").display().to_string());
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout", &key, "-out", &cert])
        .output()
        .expect("run openssl");
    assert!(made.status.success(), "openssl: {}", String::from_utf8_lossy(&made.stderr));
    // The server refuses a key others can read; as root it runs as postgres.
    let _ = Command::new("chown").args(["postgres:", &cert, &key]).status();
    let _ = Command::new("chmod").args(["600", &key]).status();
    std::fs::read(&cert).expect("read the certificate")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trusted_server_certificate_connects_over_tls() {
    let server = TestServer::private("tls").expect("start a private server");
    let pem = self_signed(&server.dir().join("data"));
    let admin = raw(server.dsn()).await;
    // One statement each: ALTER SYSTEM refuses to run in a transaction block.
    for setting in ["ssl = on", "ssl_cert_file = 'server.crt'", "ssl_key_file = 'server.key'"] {
        admin.batch_execute(&format!("alter system set {setting}")).await.expect("turn ssl on");
    }
    admin.batch_execute("select pg_reload_conf()").await.expect("reload");

    let dsn = format!("{}?sslmode=require", server.dsn());
    let trusted = PostgresOptions::new().schema("tls").listen(false).tls_root_certificate(pem);
    let store = PostgresStore::connect_with(&dsn, trusted).await.expect("TLS with a trusted certificate");
    let client = CairnQ::new(store);
    client.submit("over_tls", &json!({})).await.expect("submit over TLS");
    let encrypted = "select count(*) from pg_stat_ssl s join pg_stat_activity a using (pid) where s.ssl and a.application_name = 'cairnq-rs'";
    assert!(admin.query_one(encrypted, &[]).await.expect("pg_stat_ssl").get::<_, i64>(0) >= 1);

    let untrusted = PostgresOptions::new().schema("tls").listen(false);
    drop(client);
    let err = PostgresStore::connect_with(&dsn, untrusted).await.expect_err("an unknown certificate is refused");
    assert_eq!(err.kind(), ErrorKind::StorageError, "{err}");
    server.stop().expect("stop");
}
