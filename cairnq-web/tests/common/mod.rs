//! What the dashboard's tests share: a server on a real port, a plain
//! HTTP/1.1 client (what curl sends, headers chosen by the test), and tasks
//! in each state.

#![allow(dead_code, unreachable_pub)]

use std::net::SocketAddr;
use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, ErrorEnvelope, Task};
use cairnq_web::WebOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A dashboard on a free loopback port, served until the test ends.
pub async fn start(client: CairnQ, options: WebOptions) -> SocketAddr {
    let options = options.bind("127.0.0.1:0".parse().expect("an address"));
    let server = cairnq_web::bind(client, options).await.expect("the dashboard binds");
    let addr = server.local_addr();
    tokio::spawn(server.run());
    addr
}

/// One HTTP response.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Reply {
    /// The value of a response header (first match, name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            key.eq_ignore_ascii_case(name).then(|| value.trim())
        })
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends one request with exactly these headers (plus Host and
/// Content-Length) and reads the whole response.
pub async fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {addr}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("reads");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { unchunk(body) } else { body.to_string() };
    Reply { status, head: head.to_string(), body }
}

fn unchunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || rest.len() < size {
            break;
        }
        out.push_str(&rest[..size]);
        body = rest[size..].trim_start_matches("\r\n");
    }
    out
}

/// A form POST as a browser on the dashboard's own page sends it.
pub const FORM: (&str, &str) = ("Content-Type", "application/x-www-form-urlencoded");

/// A client over a SQLite file in `dir`.
pub async fn sqlite_client(dir: &tempfile::TempDir) -> CairnQ {
    CairnQ::new(sqlite_store(dir).await)
}

/// A SQLite store on a file in `dir`.
pub async fn sqlite_store(dir: &tempfile::TempDir) -> cairnq_sqlite::SqliteStore {
    cairnq_sqlite::SqliteStore::open(dir.path().join("queue.db")).await.expect("opens the file")
}

/// A task that failed for good (claimed and failed, not retryable).
pub async fn failed_task(client: &CairnQ, name: &str) -> Task {
    let task = client.submit(name, &serde_json::json!({"n": 1})).queue("failing").await.expect("submits");
    let worker = client.worker_session("test-worker", Duration::from_secs(60)).expect("a session");
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["failing".into()])], vec![]).await.expect("claims");
    assert!(claimed.iter().any(|t| t.id == task.id), "the test claims its task");
    let envelope = ErrorEnvelope::new("boom", "the handler <b>failed</b>").to_json();
    worker.fail(&task.id, envelope, None).await.expect("fails")
}

/// The hidden fields of the form with this id in a page, as a browser
/// would submit them (values unescaped).
pub fn hidden_fields(page: &str, form_id: &str) -> Vec<(String, String)> {
    let start = page.find(&format!("id=\"{form_id}\"")).unwrap_or_else(|| panic!("no form #{form_id}: {page}"));
    let form = &page[start..page[start..].find("</form>").map_or(page.len(), |end| start + end)];
    let attribute = |tag: &str, name: &str| {
        let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
        let value = &tag[at..at + tag[at..].find('"')?];
        Some(value.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&"))
    };
    form.split("<input")
        .skip(1)
        .filter_map(|tag| tag.split('>').next())
        .filter(|tag| tag.contains("type=\"hidden\""))
        .filter_map(|tag| Some((attribute(tag, "name")?, attribute(tag, "value")?)))
        .collect()
}

/// A form body of `pairs`, percent-encoded.
pub fn form_body(pairs: &[(String, String)]) -> String {
    let encode = |text: &str| -> String {
        text.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    pairs.iter().map(|(k, v)| format!("{}={}", encode(k), encode(v))).collect::<Vec<_>>().join("&")
}
