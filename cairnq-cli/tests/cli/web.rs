//! `cairnq web`: refuses an address off loopback without a token (exit 2,
//! nothing served), and on loopback serves the dashboard's JSON API for the
//! database it was pointed at until SIGTERM, which ends it cleanly.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::Fixture;

#[tokio::test(flavor = "multi_thread")]
async fn web_refuses_a_network_bind_without_a_token() {
    let fixture = Fixture::sqlite().await;
    let ran =
        fixture.cli.command(&["web", "--bind", "0.0.0.0:0"]).env_remove("CAIRNQ_WEB_TOKEN").output().expect("run");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("token"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_serves_the_api_of_its_database_until_sigterm() {
    let fixture = Fixture::sqlite().await;
    fixture.client.submit("resize", &json!({"w": 1})).queue("images").await.expect("submit");
    let mut child = fixture
        .cli
        .command(&["web", "--bind", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start cairnq web");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut line = String::new();
    stderr.read_line(&mut line).expect("the address line");
    let addr = line.split("http://").nth(1).and_then(|rest| rest.split('/').next()).expect("an address").to_string();

    let stats = get_json(&addr, "/api/stats");
    assert_eq!(stats["images"]["queued"], json!(1), "{stats}");

    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    assert!(status.success(), "cairnq web ends cleanly on SIGTERM: {status}");
}

/// A plain HTTP/1.1 GET, as a script would send it, and its JSON body.
fn get_json(addr: &str, path: &str) -> Value {
    let mut stream = TcpStream::connect(addr).expect("connect to the dashboard");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a response");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}
