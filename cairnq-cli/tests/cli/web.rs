//! `cairnq web`: refuses an address off loopback without a token (exit 2,
//! nothing served), and on loopback serves the dashboard's JSON API for the
//! database it was pointed at (and, with --metrics-addr, its queue gauges)
//! until SIGTERM, which ends it cleanly.

use std::io::BufReader;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::support::{Fixture, announced_addr, http_get};

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
async fn web_refuses_a_short_token() {
    let fixture = Fixture::sqlite().await;
    let ran = fixture.cli.command(&["web", "--bind", "127.0.0.1:0", "--token", "abc"]).output().expect("run");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("3 characters long; use at least 16"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_binds_localhost_and_warns_about_plain_http_off_loopback() {
    use std::io::BufRead;
    let fixture = Fixture::sqlite().await;
    let mut local =
        fixture.cli.command(&["web", "--bind", "localhost:0"]).stderr(Stdio::piped()).spawn().expect("start");
    let mut stderr = BufReader::new(local.stderr.take().expect("stderr"));
    let addr = announced_addr(&mut stderr);
    assert!(addr.starts_with("127.0.0.1:"), "localhost is loopback: {addr}");
    assert!(get_json(&addr, "/api/stats").is_object());
    stop(&mut local);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).expect("the rest of stderr");
    assert!(!rest.contains("plain HTTP"), "no warning on loopback: {rest}");

    let token = "correct-horse-battery-staple";
    let mut open = fixture
        .cli
        .command(&["web", "--bind", "0.0.0.0:0", "--token", token])
        .stderr(Stdio::piped())
        .spawn()
        .expect("start");
    let mut stderr = BufReader::new(open.stderr.take().expect("stderr"));
    announced_addr(&mut stderr);
    let mut warning = String::new();
    stderr.read_line(&mut warning).expect("reads stderr");
    stop(&mut open);
    assert!(warning.contains("plain HTTP") && warning.contains("0.0.0.0:"), "warned: {warning}");

    let ran = fixture.cli.command(&["web", "--bind", "example.com:80"]).output().expect("run");
    let stderr = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("IP:PORT, [IPv6]:PORT or localhost:PORT"), "{stderr}");
}

/// SIGTERM, and the clean end it gets.
fn stop(child: &mut std::process::Child) {
    let pid = child.id().to_string();
    let killed = std::process::Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
    assert!(killed.success());
    let status = child.wait().expect("wait");
    assert!(status.success(), "cairnq web ends cleanly on SIGTERM: {status}");
}

#[tokio::test(flavor = "multi_thread")]
async fn web_serves_the_api_of_its_database_until_sigterm() {
    let fixture = Fixture::sqlite().await;
    fixture.client.submit("resize", &json!({"w": 1})).queue("images").await.expect("submit");
    let mut child = fixture
        .cli
        .command(&["web", "--bind", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("start cairnq web");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let metrics = announced_addr(&mut stderr);
    let addr = announced_addr(&mut stderr);

    let stats = get_json(&addr, "/api/stats");
    assert_eq!(stats["images"]["queued"], json!(1), "{stats}");
    // The queue gauges are read once at start, in the background.
    let depth = "cairnq_queue_depth{queue=\"images\",status=\"queued\"} 1";
    let mut page = http_get(&metrics, "/metrics");
    for _ in 0..100 {
        if page.contains(depth) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        page = http_get(&metrics, "/metrics");
    }
    assert!(page.contains(depth), "{page}");

    stop(&mut child);
}

/// A plain HTTP/1.1 GET, as a script would send it, and its JSON body.
fn get_json(addr: &str, path: &str) -> Value {
    let body = http_get(addr, path);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"))
}
