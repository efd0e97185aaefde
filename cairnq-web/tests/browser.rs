//! The dashboard in a real browser: Debian's chromium, headless, driven
//! through chromedriver (WebDriver) against real servers on a real SQLite
//! file that the Python SDK filled (its failed task among them). One
//! browser session walks every page, so the whole file costs one browser
//! start. Screenshots of each page go to `target/web-screenshots/`.

mod common;

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cairnq_core::{CairnQ, Schedule, TaskStatus};
use cairnq_web::WebOptions;
use common::start;
use fantoccini::actions::{InputSource, MouseActions, PointerAction};
use fantoccini::error::{CmdError, ErrorStatus};
use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

/// How soon a task submitted while a page is open must show on it (the
/// issue's acceptance): the store's push, at most one settle interval held
/// back, and one re-read of the page.
const LIVE_WITHIN: Duration = Duration::from_secs(2);

/// How long the test waits for something the page will do by itself (a
/// bound on a hang, not on speed).
const EVENTUALLY: Duration = Duration::from_secs(15);

/// chromedriver, stopped when the test ends.
struct Driver {
    child: Child,
    port: u16,
    _profile: tempfile::TempDir,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

async fn browser() -> (Driver, Client) {
    let port = free_port();
    let child = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver runs (Debian: apt-get install chromium chromium-driver; .ci/run installs them)");
    let profile = tempfile::tempdir().expect("a profile dir");
    let driver = Driver { child, port, _profile: profile };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", driver.port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not start listening");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The flags headless chromium needs on this machine (no sandbox as root,
    // no network beyond loopback), and a fresh profile.
    let args = json!([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        format!("--user-data-dir={}", driver._profile.path().display()),
    ]);
    let mut caps = serde_json::Map::new();
    caps.insert("goog:chromeOptions".into(), json!({ "args": args, "binary": "/usr/bin/chromium" }));
    let client = ClientBuilder::native()
        .capabilities(caps)
        .connect(&format!("http://127.0.0.1:{}", driver.port))
        .await
        .expect("a browser session");
    (driver, client)
}

/// The Python peer SDK, filling the database as another process would.
fn python_peer(args: &[&str]) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let python = std::env::var("CAIRNQ_PYTHON").map_or_else(|_| root.join(".venv/bin/python"), PathBuf::from);
    let output =
        Command::new(&python).arg(root.join("cairnq-testkit/interop/peer.py")).args(args).output().unwrap_or_else(
            |e| panic!("the Python peer ({}) runs: {e}; set CAIRNQ_PYTHON or run cargo xtask test", python.display()),
        );
    assert!(output.status.success(), "peer {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("the peer prints JSON")
}

async fn screenshot(browser: &Client, name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/web-screenshots");
    std::fs::create_dir_all(&dir).expect("the screenshot dir");
    let png = browser.screenshot().await.expect("a screenshot");
    std::fs::write(dir.join(format!("{name}.png")), png).expect("the screenshot is saved");
}

/// The text of the first element `css` selects, read in one script call
/// (a live refresh may swap the element between two WebDriver calls).
async fn text(browser: &Client, css: &str) -> String {
    let script = "const e = document.querySelector(arguments[0]); return e === null ? null : e.innerText.trim();";
    let found = browser.execute(script, vec![json!(css)]).await.expect("reads the page");
    found.as_str().unwrap_or_else(|| panic!("nothing matches {css}")).to_string()
}

/// Clicks the button with this id, found and clicked in one script call
/// (a live refresh may swap the button between two WebDriver calls).
async fn press(browser: &Client, id: &str) {
    let script =
        "const b = document.getElementById(arguments[0]); if (b === null) return false; b.click(); return true;";
    let pressed = browser.execute(script, vec![json!(id)]).await.expect("runs the click");
    assert_eq!(pressed, json!(true), "there is a #{id} button");
}

/// Waits for `css` to match (after a navigation).
async fn appears(browser: &Client, css: &str) {
    browser.wait().for_element(Locator::Css(css)).await.unwrap_or_else(|e| panic!("{css} never appeared: {e}"));
}

async fn status(client: &CairnQ, id: &str) -> TaskStatus {
    client.get(id).await.expect("reads").expect("the task exists").status
}

/// Waits until the script `predicate` returns true (the page's own
/// doing: a live refresh, a hint), at most [`EVENTUALLY`].
async fn until(browser: &Client, predicate: &str, what: &str) {
    let deadline = Instant::now() + EVENTUALLY;
    loop {
        let holds = browser.execute(&format!("return {predicate};"), vec![]).await.expect("reads the page");
        if holds == json!(true) {
            return;
        }
        assert!(Instant::now() < deadline, "{what} never happened ({predicate})");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Moves the mouse pointer to the centre of the first element `css` selects.
/// A live update may replace the element between the find and the move (it
/// is then stale): the element is found again, a few times at most.
async fn point_at(browser: &Client, css: &str) {
    for _ in 0..10 {
        let element = browser.find(Locator::Css(css)).await.unwrap_or_else(|e| panic!("no {css}: {e}"));
        let to = PointerAction::MoveToElement { element, duration: None, x: 0.0, y: 0.0 };
        match browser.perform_actions(MouseActions::new("mouse".into()).then(to)).await {
            Ok(()) => return,
            Err(CmdError::Standard(e)) if e.error == ErrorStatus::StaleElementReference => continue,
            Err(e) => panic!("moves the pointer: {e}"),
        }
    }
    panic!("{css} was replaced under the pointer ten times running");
}

/// The ids of the task rows shown, top to bottom.
async fn row_ids(browser: &Client) -> Value {
    let script = "return Array.from(document.querySelectorAll('table#tasks tbody tr[data-id]'), r => r.dataset.id);";
    browser.execute(script, vec![]).await.expect("reads the rows")
}

/// Another site: one page holding a form that posts to `action`.
async fn evil_site(action: &str) -> SocketAddr {
    let page = format!("<!doctype html><form method=post action=\"{action}\"><button>win a prize</button></form>");
    let app = axum::Router::new().route("/", axum::routing::get(move || async move { axum::response::Html(page) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// A POST from the open page's own script, answered with its status.
async fn page_post(browser: &Client, url: &str) -> u64 {
    let script = "const done = arguments[arguments.length - 1]; fetch(arguments[0], {method: 'POST'}).then(r => done(r.status), () => done(0));";
    browser.execute_async(script, vec![json!(url)]).await.expect("the page posts").as_u64().unwrap_or(0)
}

/// Waits until the overview's cell of `queue` and `status` reads `want`,
/// at most [`LIVE_WITHIN`] after `since`; how long it took.
async fn shows_within(browser: &Client, since: Instant, queue: &str, status: &str, want: &str) -> Duration {
    let cell = format!("tr[data-queue='{queue}'] td[data-status={status}]");
    let script = "const e = document.querySelector(arguments[0]); return e === null ? null : e.innerText.trim();";
    loop {
        let shown = browser.execute(script, vec![json!(cell)]).await.expect("reads the page");
        if shown.as_str() == Some(want) {
            return since.elapsed();
        }
        assert!(since.elapsed() < LIVE_WITHIN, "{queue}/{status} still shows {shown} after {:?}", since.elapsed());
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_in_a_real_browser() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let path = dir.path().join("queue.db");
    let client = CairnQ::new(cairnq_sqlite::SqliteStore::open(&path).await.expect("opens the file"));
    let db = path.to_str().expect("a UTF-8 path");
    // The Python SDK fills the queue: four resizes, one of them done, a
    // task whose payload holds markup, and one it failed for good.
    python_peer(&["submit-many", db, "py.resize", "4"]);
    python_peer(&["claim-complete", db, "py.resize", "{\"ok\": true}"]);
    let scripted =
        python_peer(&["submit", db, "py.render", "{\"html\": \"<script>window.pwned = 1</script><b>bold</b>\"}"]);
    let scripted = scripted["id"].as_str().expect("the peer's task id").to_string();
    let boom = python_peer(&["submit-many", db, "py.boom", "1"]);
    assert_eq!(python_peer(&["claim-fail", db, "py.boom", "1"])["failed"], 1, "the peer failed its task");
    let failed = boom[0].as_str().expect("the peer's failed task").to_string();
    let nightly = Schedule::cron("nightly-report", "0 3 * * *", "report").expect("a spec").tz("Europe/Berlin");
    client.save_schedule(&nightly.expect("a zone")).await.expect("saves a schedule");

    let addr = start(client.clone(), WebOptions::new()).await;
    let (_driver, browser) = browser().await;
    let base = format!("http://{addr}");

    // The overview shows the counts the Python SDK wrote.
    browser.goto(&format!("{base}/")).await.expect("opens the overview");
    let stats = client.stats(None).await.expect("stats");
    assert_eq!((stats["default"].queued, stats["default"].failed), (4, 1), "three resizes and the render wait");
    assert_eq!(text(&browser, "tr[data-queue=default] td[data-status=queued]").await, "4");
    assert_eq!(text(&browser, "tr[data-queue=default] td[data-status=succeeded]").await, "1");
    assert_eq!(text(&browser, "tr[data-queue=default] td[data-status=failed]").await, "1");
    browser.find(Locator::Css("svg#throughput")).await.expect("the throughput chart");
    screenshot(&browser, "overview").await;

    // A task submitted while the page is open appears without a reload,
    // within 2 s: from this process, and from another process (the Python
    // SDK) on a queue the page has never shown.
    browser.execute("window.cairnqSamePage = true;", vec![]).await.expect("marks the page");
    let submitted = Instant::now();
    client.submit("email", &json!({})).await.expect("submits");
    println!("live update after {:?}", shows_within(&browser, submitted, "default", "queued", "5").await);
    python_peer(&["submit-to", db, "py-new-queue", "py.hello", "{}"]);
    let peer_done = Instant::now();
    let took = shows_within(&browser, peer_done, "py-new-queue", "queued", "1").await;
    println!("another process's task on a new queue after {took:?}");
    let same = browser.execute("return window.cairnqSamePage === true;", vec![]).await.expect("reads the mark");
    assert_eq!(same, json!(true), "the page updated in place, not by a reload");

    // A payload holding <script> renders as text and never runs.
    browser.goto(&format!("{base}/tasks/{scripted}")).await.expect("opens the task");
    assert!(text(&browser, "pre.json").await.contains("<script>window.pwned = 1</script><b>bold</b>"));
    let ran = browser
        .execute(
            "return [window.pwned === undefined, document.scripts.length, document.querySelectorAll('main b').length];",
            vec![],
        )
        .await
        .expect("reads");
    assert_eq!(ran, json!([true, 1, 0]), "no script ran and no markup came from the payload");
    assert_eq!(text(&browser, "#task-key").await, "py-key-py.render", "the key the peer submitted it with");
    screenshot(&browser, "task-detail").await;

    // The task list says why a task failed: the envelope's message, as text
    // (markup in it shows as written).
    let marked = common::failed_task(&client, "explode").await;
    browser.goto(&format!("{base}/tasks?status=failed")).await.expect("opens the failed tasks");
    assert_eq!(text(&browser, &format!("tr[data-id='{failed}'] td.error")).await, "python failed it");
    assert_eq!(text(&browser, &format!("tr[data-id='{}'] td.error", marked.id)).await, "the handler <b>failed</b>");
    let markup = browser.execute("return document.querySelectorAll('td.error b').length;", vec![]).await;
    assert_eq!(markup.expect("reads"), json!(0), "no markup from an error message");
    screenshot(&browser, "tasks-errors").await;

    // The failed task the Python SDK left: open it, press retry, and it is
    // queued in the database.
    browser.goto(&format!("{base}/tasks/{failed}")).await.expect("opens the failed task");
    assert!(text(&browser, "#error").await.contains("python failed it"), "the peer's error envelope");
    screenshot(&browser, "task-failed").await;
    press(&browser, "retry").await;
    appears(&browser, "#task-status .status.queued").await;
    assert_eq!(status(&client, &failed).await, TaskStatus::Queued);

    browser.goto(&format!("{base}/tasks?queue=default")).await.expect("opens the tasks page");
    assert_eq!(
        browser.find_all(Locator::Css("table#tasks tbody tr[data-id]")).await.expect("rows").len(),
        7,
        "4 resizes, the render, the retried boom, the email"
    );
    screenshot(&browser, "tasks").await;
    browser.goto(&format!("{base}/tasks/preview?action=cancel&queue=default")).await.expect("opens a preview");
    assert_eq!(text(&browser, "#preview-count strong").await, "6", "every queued task of the queue");
    screenshot(&browser, "bulk-preview").await;

    // An action on selected rows lands back on the same filtered list.
    browser.goto(&format!("{base}/tasks?queue=default&status=queued")).await.expect("opens a filtered list");
    let ids = row_ids(&browser).await;
    let victim = ids[0].as_str().expect("a queued task").to_string();
    let tick_and_cancel = "document.querySelector(`input[name=id][value='${arguments[0]}']`).checked = true; \
                           document.getElementById('bulk-cancel').click();";
    browser.execute(tick_and_cancel, vec![json!(victim)]).await.expect("cancels the selected row");
    appears(&browser, "#notice").await;
    let url = browser.current_url().await.expect("a url");
    assert_eq!(url.path(), "/tasks");
    assert!(url.query().is_some_and(|q| q.starts_with("queue=default&status=queued&notice=")), "{url}");
    assert_eq!(text(&browser, "#notice").await, "cancel: 1 task(s) changed");
    let shown = browser.execute("return document.querySelector('select[name=status]').value;", vec![]).await;
    assert_eq!(shown.expect("reads"), json!("queued"), "the filter form still says queued");
    assert_eq!(status(&client, &victim).await, TaskStatus::Canceled);
    assert!(!row_ids(&browser).await.as_array().expect("ids").contains(&json!(victim)), "it left the list");
    screenshot(&browser, "tasks-after-bulk").await;

    // Live updates do not move rows under the pointer: a change is counted
    // and offered, and applied when the pointer leaves the table.
    browser.goto(&format!("{base}/tasks?queue=default")).await.expect("opens the tasks page");
    browser.execute("window.cairnqSamePage = true;", vec![]).await.expect("marks the page");
    point_at(&browser, "table#tasks").await;
    let before = row_ids(&browser).await;
    let held = client.submit("held", &json!({})).await.expect("submits");
    until(&browser, "document.getElementById('updates').hidden === false", "the update hint").await;
    // At least the submit's change (the hub's periodic "look again" may add one).
    let hint = text(&browser, "#updates").await;
    let counted = hint.split(' ').next().and_then(|n| n.parse::<u32>().ok());
    assert!(counted >= Some(1) && hint.ends_with(" new update \u{2014} refresh") == (counted == Some(1)), "{hint}");
    assert!(hint.ends_with("\u{2014} refresh"), "{hint}");
    assert_eq!(row_ids(&browser).await, before, "the rows stay while the pointer is on them");
    screenshot(&browser, "tasks-held-update").await;
    point_at(&browser, "h1").await;
    let shows_held = format!("document.querySelector(\"tr[data-id='{}']\") !== null", held.id);
    until(&browser, &shows_held, "the held update applied when the pointer left").await;
    assert_eq!(
        browser.execute("return document.getElementById('updates').hidden;", vec![]).await.expect("reads"),
        json!(true)
    );
    // Rows ticked hold updates too; the hint applies them and keeps the ticks.
    let tick = "document.querySelector(`input[name=id][value='${arguments[0]}']`).checked = true;";
    browser.execute(tick, vec![json!(held.id)]).await.expect("ticks a row");
    let second = client.submit("held", &json!({})).await.expect("submits");
    until(&browser, "document.getElementById('updates').hidden === false", "the update hint").await;
    assert!(!row_ids(&browser).await.as_array().expect("ids").contains(&json!(second.id)), "held while ticked");
    press(&browser, "updates").await;
    until(&browser, &format!("document.querySelector(\"tr[data-id='{}']\") !== null", second.id), "the refresh").await;
    let ticked = format!("document.querySelector(\"input[name=id][value='{}']\").checked", held.id);
    until(&browser, &ticked, "the tick kept across the refresh").await;
    let same = browser.execute("return window.cairnqSamePage === true;", vec![]).await.expect("reads the mark");
    assert_eq!(same, json!(true), "updated in place, not by a reload");
    browser.goto(&format!("{base}/workers")).await.expect("opens the workers page");
    screenshot(&browser, "workers").await;

    // Schedules: pause from the page, and the database says paused.
    browser.goto(&format!("{base}/schedules")).await.expect("opens the schedules page");
    screenshot(&browser, "schedules").await;
    let pause = "document.querySelector('tr[data-schedule=nightly-report] button[data-action=pause]').click();";
    browser.execute(pause, vec![]).await.expect("presses pause");
    appears(&browser, "#notice").await;
    assert!(client.schedule("nightly-report").await.expect("reads").expect("exists").paused);

    // Another site's page cannot make the browser act: a page of its own
    // (no dashboard policy on it) posts a form to the dashboard.
    let target = client.submit("email", &json!({})).await.expect("submits");
    let evil = evil_site(&format!("{base}/tasks/{}/cancel", target.id)).await;
    browser.goto(&format!("http://{evil}/")).await.expect("opens the other site");
    browser.execute("document.forms[0].submit();", vec![]).await.expect("posts the form");
    appears(&browser, "p.notice.bad").await;
    assert!(text(&browser, "p.notice.bad").await.contains("cross-origin request refused"));
    assert_eq!(status(&client, &target.id).await, TaskStatus::Queued, "the forged cancel changed nothing");
    let other = addr;
    // The same cancel from the dashboard's own page goes through.
    browser.goto(&format!("http://{other}/tasks/{}", target.id)).await.expect("opens the task");
    press(&browser, "cancel").await;
    appears(&browser, "#task-status .status.canceled").await;

    // Read-only: no buttons, and the page's own POST is refused.
    let read_only = start(client.clone(), WebOptions::new().read_only()).await;
    let queued_task = client.submit("email", &json!({})).await.expect("submits");
    browser.goto(&format!("http://{read_only}/tasks/{}", queued_task.id)).await.expect("opens the task");
    assert!(browser.find(Locator::Id("cancel")).await.is_err(), "no cancel button when read-only");
    assert_eq!(page_post(&browser, &format!("/api/tasks/{}/cancel", queued_task.id)).await, 403);
    assert_eq!(status(&client, &queued_task.id).await, TaskStatus::Queued);

    // A dashboard on every interface needs its token: the browser logs in.
    let guarded = WebOptions::new().bind("0.0.0.0:0".parse().expect("an address")).token("s3cret-s3cret-s3cret");
    let server = cairnq_web::bind(client.clone(), guarded).await.expect("binds with a token");
    let port = server.local_addr().port();
    tokio::spawn(server.run());
    let guarded = SocketAddr::from(([127, 0, 0, 1], port));
    browser.goto(&format!("http://{guarded}/tasks?status=failed")).await.expect("opens the guarded dashboard");
    assert!(browser.current_url().await.expect("a url").path().ends_with("/login"), "sent to log in");
    assert_eq!(page_post(&browser, &format!("/api/tasks/{}/cancel", queued_task.id)).await, 401);
    screenshot(&browser, "login").await;
    browser
        .find(Locator::Css("input[name=token]"))
        .await
        .expect("the token field")
        .send_keys("s3cret-s3cret-s3cret")
        .await
        .expect("types");
    browser.find(Locator::Css("form.login button")).await.expect("the button").click().await.expect("logs in");
    // Back on the page asked for, with its filter, not the overview.
    appears(&browser, "table#tasks").await;
    let url = browser.current_url().await.expect("a url");
    assert_eq!((url.path(), url.query()), ("/tasks", Some("status=failed")), "{url}");
    assert_eq!(text(&browser, &format!("tr[data-id='{}'] td.error", marked.id)).await, "the handler <b>failed</b>");
    screenshot(&browser, "after-login").await;

    browser.close().await.expect("the browser closes");
}
