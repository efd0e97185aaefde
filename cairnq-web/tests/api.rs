//! The JSON API on both backends (a SQLite file and the Postgres server),
//! and the guard in front of it: token, read-only, cross-origin refusals,
//! and a script's plain POST.

mod common;

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_testkit::postgres::PostgresFactory;
use cairnq_testkit::support::fresh;
use cairnq_web::{WebError, WebOptions};
use common::{FORM, failed_task, http, sqlite_client, start};

/// Every endpoint, as a script uses it, against `client`'s store.
async fn every_endpoint(client: CairnQ) {
    let addr = start(client.clone(), WebOptions::new()).await;
    let keyed =
        client.submit("email", &serde_json::json!({"to": "a@example.com"})).key("mail-1").await.expect("submits");
    for n in 0..3 {
        client.submit("resize", &serde_json::json!({"n": n})).queue("images").await.expect("submits");
    }
    let failed = failed_task(&client, "explode").await;

    let stats = http(addr, "GET", "/api/stats", &[], "").await;
    assert_eq!(stats.status, 200, "{}", stats.body);
    let stats = stats.json();
    assert_eq!(stats["images"]["queued"], 3);
    assert_eq!(stats["default"]["queued"], 1);
    assert_eq!(stats["failing"]["failed"], 1);
    assert_eq!(stats["images"]["succeeded"], 0, "every status is present");

    let first = http(addr, "GET", "/api/tasks?queue=images&limit=2", &[], "").await.json();
    assert_eq!(first["tasks"].as_array().map(Vec::len), Some(2));
    let next = first["next"].as_str().expect("a full page has a next cursor").to_string();
    let second = http(addr, "GET", &format!("/api/tasks?queue=images&limit=2&after={next}"), &[], "").await.json();
    assert_eq!(second["tasks"].as_array().map(Vec::len), Some(1), "keyset paging reaches the last row");
    assert!(second["next"].is_null());
    let by_key = http(addr, "GET", "/api/tasks?key=mail-1", &[], "").await.json();
    assert_eq!(by_key["tasks"][0]["id"], keyed.id.as_str());
    let by_status = http(addr, "GET", "/api/tasks?status=failed", &[], "").await.json();
    assert_eq!(by_status["tasks"][0]["id"], failed.id.as_str());
    let by_root = http(addr, "GET", &format!("/api/tasks?root={}", keyed.id), &[], "").await.json();
    assert_eq!(by_root["tasks"].as_array().map(Vec::len), Some(1));
    let future = http(addr, "GET", "/api/tasks?since=2999-01-01T00:00", &[], "").await.json();
    assert_eq!(future["tasks"].as_array().map(Vec::len), Some(0), "since excludes every older task");
    let past = http(addr, "GET", "/api/tasks?until=2000-01-01T00:00", &[], "").await.json();
    assert_eq!(past["tasks"].as_array().map(Vec::len), Some(0), "until excludes every newer task");
    let keyed_later = http(addr, "GET", "/api/tasks?key=mail-1&since=2999-01-01", &[], "").await.json();
    assert_eq!(keyed_later["tasks"].as_array().map(Vec::len), Some(0), "a key and a created range both apply");
    let backwards = http(addr, "GET", "/api/tasks?since=2024-12-02&until=2024-12-01", &[], "").await;
    assert_eq!(backwards.status, 400, "a range that ends before it starts is refused: {}", backwards.body);

    let one = http(addr, "GET", &format!("/api/tasks/{}", failed.id), &[], "").await;
    assert_eq!(one.status, 200);
    let one = one.json();
    for column in
        ["id", "name", "queue", "status", "payload", "error", "max_attempts", "created_at_ms", "completed_at_ms"]
    {
        assert!(one.get(column).is_some(), "task JSON has the protocol column {column}: {one}");
    }
    assert_eq!(one["error"]["code"], "boom");

    assert_eq!(http(addr, "GET", "/api/tasks/task_missing", &[], "").await.status, 404);
    let bad = http(addr, "GET", "/api/tasks?status=sleeping", &[], "").await;
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"].as_str().is_some_and(|e| e.contains("sleeping")));
    assert_eq!(http(addr, "GET", "/api/tasks?limit=0", &[], "").await.status, 400);

    // A script's plain POST on a tokenless loopback dashboard.
    let retried = http(addr, "POST", &format!("/api/tasks/{}/retry", failed.id), &[], "").await;
    assert_eq!(retried.status, 200, "{}", retried.body);
    assert_eq!(retried.json()["status"], "queued");
    assert_eq!(client.get(&failed.id).await.expect("reads").expect("exists").status, TaskStatus::Queued);
    let again = http(addr, "POST", &format!("/api/tasks/{}/retry", failed.id), &[], "").await;
    assert_eq!(again.status, 409, "a queued task is not retried: {}", again.body);

    let canceled = http(addr, "POST", &format!("/api/tasks/{}/cancel", keyed.id), &[], "").await;
    assert_eq!(canceled.status, 200, "{}", canceled.body);
    assert_eq!(canceled.json()["status"], "canceled");
    assert_eq!(http(addr, "POST", &format!("/api/tasks/{}/cancel", keyed.id), &[], "").await.status, 409);
    assert_eq!(http(addr, "POST", "/api/tasks/task_missing/cancel", &[], "").await.status, 404);
    assert_eq!(
        http(addr, "GET", &format!("/api/tasks/{}/cancel", keyed.id), &[], "").await.status,
        405,
        "actions are POST-only"
    );
}

#[tokio::test]
async fn every_endpoint_on_sqlite() {
    let dir = tempfile::tempdir().expect("a temp dir");
    every_endpoint(sqlite_client(&dir).await).await;
}

#[tokio::test]
async fn every_endpoint_on_postgres() {
    let factory = PostgresFactory::from_test_server().expect("the Postgres test server");
    let (client, _fresh) = fresh(&factory).await;
    every_endpoint(client).await;
}

#[tokio::test]
async fn a_network_bind_needs_a_token_and_a_token_is_required_then() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let open = cairnq_web::bind(client.clone(), WebOptions::new().bind("0.0.0.0:0".parse().expect("an address"))).await;
    assert!(matches!(open, Err(WebError::TokenRequired(_))), "{open:?}");
    let empty = cairnq_web::bind(client.clone(), WebOptions::new().token("")).await;
    assert!(matches!(empty, Err(WebError::BadToken)), "{empty:?}");
    let guarded = WebOptions::new().bind("0.0.0.0:0".parse().expect("an address")).token("s3cret-s3cret-s3cret");
    let server = cairnq_web::bind(client.clone(), guarded).await.expect("binds with a token");
    let warning = server.exposure_warning().expect("a network bind over plain HTTP is warned about");
    assert!(warning.contains("plain HTTP") && warning.contains(&server.local_addr().to_string()), "{warning}");
    let port = server.local_addr().port();
    tokio::spawn(server.run());
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let task = client.submit("email", &serde_json::json!({})).await.expect("submits");

    assert_eq!(http(addr, "GET", "/api/stats", &[], "").await.status, 401);
    assert_eq!(http(addr, "GET", "/api/stats", &[("Authorization", "Bearer wrong")], "").await.status, 401);
    assert_eq!(
        http(addr, "GET", "/api/stats", &[("Authorization", "Bearer s3cret-s3cret-s3cret")], "").await.status,
        200
    );
    let cancel = format!("/api/tasks/{}/cancel", task.id);
    assert_eq!(http(addr, "POST", &cancel, &[], "").await.status, 401, "a tokenless POST is refused");
    assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Queued);
    let page = http(addr, "GET", "/tasks", &[], "").await;
    assert_eq!(page.status, 303, "a browser is sent to log in");
    assert_eq!(page.header("location"), Some("/login?next=%2Ftasks"), "and back here after");

    let wrong = http(addr, "POST", "/login", &[FORM], "token=nope").await;
    assert_eq!(wrong.status, 401);
    let login = http(addr, "POST", "/login", &[FORM], "token=s3cret-s3cret-s3cret").await;
    assert_eq!(login.status, 303);
    let cookie = login.header("set-cookie").expect("a login cookie").split(';').next().unwrap_or("").to_string();
    assert!(login.header("set-cookie").is_some_and(|c| c.contains("HttpOnly") && c.contains("SameSite=Strict")));
    assert_eq!(http(addr, "GET", "/tasks", &[("Cookie", &cookie)], "").await.status, 200);

    // The cookie does not let another site's page act: the browser names its origin.
    let evil = [("Cookie", cookie.as_str()), ("Origin", "http://evil.example"), FORM];
    assert_eq!(http(addr, "POST", &format!("/tasks/{}/cancel", task.id), &evil, "").await.status, 403);
    assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Queued);
    let bearer = http(addr, "POST", &cancel, &[("Authorization", "Bearer s3cret-s3cret-s3cret")], "").await;
    assert_eq!(bearer.status, 200, "a script with the token acts: {}", bearer.body);
}

#[tokio::test]
async fn localhost_is_a_bind_address_and_loopback_is_not_warned_about() {
    for (text, want) in [("localhost:8080", "127.0.0.1:8080"), ("LOCALHOST:0", "127.0.0.1:0"), ("[::1]:9", "[::1]:9")] {
        assert_eq!(cairnq_web::parse_bind(text).expect(text), want.parse().expect("an address"), "{text}");
    }
    for bad in ["localhost", "localhost:http", "example.com:80", "evil.localhost.example:80", ""] {
        let refused = cairnq_web::parse_bind(bad);
        assert!(matches!(refused, Err(WebError::BadBind(_))), "{bad:?}: {refused:?}");
    }
    let dir = tempfile::tempdir().expect("a temp dir");
    let addr = cairnq_web::parse_bind("localhost:0").expect("an address");
    let server = cairnq_web::bind(sqlite_client(&dir).await, WebOptions::new().bind(addr)).await.expect("binds");
    assert!(server.local_addr().ip().is_loopback());
    assert_eq!(server.exposure_warning(), None, "loopback is not exposed");
}

#[tokio::test]
async fn cross_origin_posts_are_refused_and_same_origin_ones_act() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let task = failed_task(&client, "explode").await;
    let retry = format!("/tasks/{}/retry", task.id);
    for header in [("Origin", "http://evil.example"), ("Sec-Fetch-Site", "cross-site"), ("Origin", "null")] {
        let refused = http(addr, "POST", &retry, &[header, FORM], "").await;
        assert_eq!(refused.status, 403, "{header:?}: {}", refused.body);
        assert!(refused.body.contains("cross-origin request refused"));
    }
    assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Failed);
    let own = format!("http://{addr}");
    let same = http(addr, "POST", &retry, &[("Origin", &own), ("Sec-Fetch-Site", "same-origin"), FORM], "").await;
    assert_eq!(same.status, 303, "{}", same.body);
    assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Queued);
}

#[tokio::test]
async fn a_tokenless_dashboard_answers_only_to_loopback_names() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let addr = start(sqlite_client(&dir).await, WebOptions::new()).await;
    // A rebound DNS name reaching 127.0.0.1 is same-origin with itself; the Host gives it away.
    let rebound = http(addr, "GET", "/api/stats", &[("Host", "evil.example:8080")], "").await;
    assert_eq!(rebound.status, 421, "{}", rebound.body);
    let post =
        http(addr, "POST", "/api/tasks/x/cancel", &[("Host", "evil.example"), ("Origin", "http://evil.example")], "")
            .await;
    assert_eq!(post.status, 421);
    for host in ["localhost:1", "127.0.0.1", "[::1]:8080", "app.localhost"] {
        assert_eq!(http(addr, "GET", "/api/stats", &[("Host", host)], "").await.status, 200, "{host}");
    }
}

#[tokio::test]
async fn read_only_hides_and_refuses_every_action() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new().read_only()).await;
    let task = failed_task(&client, "explode").await;
    let page = http(addr, "GET", &format!("/tasks/{}", task.id), &[], "").await;
    assert_eq!(page.status, 200);
    assert!(!page.body.contains("/retry"), "no retry button on a read-only page");
    assert!(!http(addr, "GET", "/tasks", &[], "").await.body.contains("/tasks/bulk\""), "no bulk form");
    for path in
        [format!("/api/tasks/{}/retry", task.id), format!("/tasks/{}/retry", task.id), "/tasks/bulk".to_string()]
    {
        let refused = http(addr, "POST", &path, &[FORM], "action=retry&scope=matching").await;
        assert_eq!(refused.status, 403, "{path}: {}", refused.body);
    }
    assert_eq!(http(addr, "GET", "/tasks/preview?action=retry", &[], "").await.status, 403);
    assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Failed);
}

#[tokio::test]
async fn html_in_a_payload_renders_as_text() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let evil = "<script>alert('x')</script>";
    let task = client
        .submit("<img src=x onerror=alert(1)>", &serde_json::json!({ "html": evil }))
        .queue("q\"><b>")
        .await
        .expect("submits");
    let page = http(addr, "GET", &format!("/tasks/{}", task.id), &[], "").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("&lt;script&gt;alert('x')&lt;/script&gt;"), "{}", page.body);
    assert!(!page.body.contains("<script>alert"), "the payload's script tag is never markup");
    assert!(!page.body.contains("<img src=x"), "the name is never markup");
    assert!(page.header("content-security-policy").is_some_and(|p| p.contains("script-src 'self'")));
    let list = http(addr, "GET", "/tasks", &[], "").await;
    assert!(!list.body.contains("<img src=x") && !list.body.contains("\"><b>"), "{}", list.body);
    let overview = http(addr, "GET", "/", &[], "").await;
    assert!(!overview.body.contains("\"><b>") && overview.body.contains("q%22%3E%3Cb%3E"), "{}", overview.body);
}

#[tokio::test]
async fn the_bulk_preview_counts_before_anything_changes() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let failed = [failed_task(&client, "explode").await, failed_task(&client, "explode").await];
    client.submit("explode", &serde_json::json!({})).queue("failing").await.expect("submits");
    let preview = http(addr, "GET", "/tasks/preview?action=retry&queue=failing", &[], "").await;
    assert_eq!(preview.status, 200, "{}", preview.body);
    assert!(preview.body.contains("<strong>2</strong>"), "two of the three matching can be retried: {}", preview.body);
    for task in &failed {
        assert_eq!(
            client.get(&task.id).await.expect("reads").expect("exists").status,
            TaskStatus::Failed,
            "a preview changes nothing"
        );
    }
    // Filters beyond queue and status are counted by the store, bounded.
    let by_name = http(addr, "GET", "/tasks/preview?action=cancel&name=explode", &[], "").await;
    assert!(by_name.body.contains("<strong>1</strong>"), "the one queued: {}", by_name.body);
    let none_since =
        http(addr, "GET", "/tasks/preview?action=retry&name=explode&since=2999-01-01T00:00", &[], "").await;
    assert!(none_since.body.contains("<strong>0</strong>"), "{}", none_since.body);
    let own = format!("http://{addr}");
    let applied =
        http(addr, "POST", "/tasks/bulk", &[("Origin", &own), FORM], "scope=matching&action=retry&queue=failing").await;
    assert_eq!(applied.status, 303, "{}", applied.body);
    for task in &failed {
        assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Queued);
    }
    let body = format!("scope=selected&action=cancel&id={}&id={}", failed[0].id, failed[1].id);
    assert_eq!(http(addr, "POST", "/tasks/bulk", &[("Origin", &own), FORM], &body).await.status, 303);
    for task in &failed {
        assert_eq!(client.get(&task.id).await.expect("reads").expect("exists").status, TaskStatus::Canceled);
    }
    // The library's rule, as `cairnq retry` has it: a canceled task was
    // stopped on purpose, so retrying it takes asking for it by status.
    let preview = |query: &'static str| http(addr, "GET", query, &[], "");
    let unasked = preview("/tasks/preview?action=retry&queue=failing").await;
    assert!(unasked.body.contains("<strong>0</strong>"), "only failed tasks without a status: {}", unasked.body);
    let asked = preview("/tasks/preview?action=retry&queue=failing&status=canceled").await;
    assert!(asked.body.contains("<strong>2</strong>"), "{}", asked.body);
    let unmovable = preview("/tasks/preview?action=retry&status=succeeded").await;
    assert_eq!(unmovable.status, 400, "a status the action cannot move: {}", unmovable.body);
    assert!(unmovable.body.contains("only failed or canceled tasks can be retried"), "{}", unmovable.body);
    let everything = preview("/tasks/preview?action=cancel").await;
    assert_eq!(everything.status, 400, "a filter that sets nothing: {}", everything.body);
    assert!(everything.body.contains("sets nothing"), "{}", everything.body);
    let purge = http(addr, "GET", "/tasks/preview?action=purge&queue=failing&status=canceled", &[], "").await;
    assert!(purge.body.contains("<strong>2</strong>"), "{}", purge.body);
    let body = "scope=matching&action=purge&queue=failing&status=canceled";
    assert_eq!(http(addr, "POST", "/tasks/bulk", &[("Origin", &own), FORM], body).await.status, 303);
    assert!(client.get(&failed[0].id).await.expect("reads").is_none(), "purged");
}

#[tokio::test]
async fn a_task_page_shows_its_key_children_and_what_is_not_recorded() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let parent = client.submit("parent", &serde_json::json!({})).key("order-<7>").await.expect("submits");
    let options = cairnq_core::SubmitOptions::new().parent_id(&parent.id).root_id(&parent.id);
    let child = client.submit("child", &serde_json::json!({})).options(options).await.expect("submits");
    let page = http(addr, "GET", &format!("/tasks/{}", parent.id), &[], "").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("<code>order-&lt;7&gt;</code>"), "the key, escaped: {}", page.body);
    assert!(page.body.contains(&format!("href=\"/tasks/{}\"", child.id)), "the child is linked");
    assert!(page.body.contains("the protocol keeps no start time"), "it says so");
    let child_page = http(addr, "GET", &format!("/tasks/{}", child.id), &[], "").await;
    assert!(child_page.body.contains("id=\"task-key\"><span class=\"muted\">—"), "no key: {}", child_page.body);

    client
        .submit("later", &serde_json::json!({}))
        .queue("later")
        .delay(std::time::Duration::from_secs(3600))
        .await
        .expect("submits");
    let overview = http(addr, "GET", "/", &[], "").await;
    let row = |queue: &str| {
        let at = overview.body.find(&format!("data-queue=\"{queue}\"")).expect("the queue's row");
        overview.body[at..].split("</tr>").next().unwrap_or("").to_string()
    };
    let due = row("default");
    assert!(due.contains("class=\"oldest\">") && !due.contains("class=\"oldest\"><span"), "an age: {due}");
    assert!(row("later").contains("class=\"oldest\"><span class=\"muted\">—"), "nothing due: {}", row("later"));
    assert!(overview.body.contains("id=\"sampled\""), "the page says the reads are separate");
}

#[tokio::test]
async fn mounted_under_a_prefix_its_links_follow() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let task = client.submit("email", &serde_json::json!({})).await.expect("submits");
    let dashboard = cairnq_web::router(client, &WebOptions::new()).expect("a router");
    let app = axum::Router::new().nest("/admin/queue", dashboard);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let addr = listener.local_addr().expect("an address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let overview = http(addr, "GET", "/admin/queue", &[], "").await;
    assert_eq!(overview.status, 200, "{}", overview.body);
    assert!(overview.body.contains("href=\"/admin/queue/tasks\""), "{}", overview.body);
    assert!(overview.body.contains("href=\"/admin/queue\""), "the overview link is the mount path");
    assert!(overview.body.contains("src=\"/admin/queue/assets/app.js\""));
    let detail = http(addr, "GET", &format!("/admin/queue/tasks/{}", task.id), &[], "").await;
    assert!(detail.body.contains(&format!("action=\"/admin/queue/tasks/{}/cancel\"", task.id)), "{}", detail.body);
    assert_eq!(http(addr, "GET", "/admin/queue/assets/app.js", &[], "").await.status, 200);
}

#[tokio::test]
async fn events_announce_a_change_and_end_when_the_server_shuts_down() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let server = cairnq_web::bind(client.clone(), WebOptions::new().bind("127.0.0.1:0".parse().expect("an address")))
        .await
        .expect("binds");
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connects");
    let request = format!("GET /events HTTP/1.1\r\nHost: {addr}\r\nAccept: text/event-stream\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("sends");
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    let n = stream.read(&mut buffer).await.expect("reads the head");
    seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    assert!(seen.contains("text/event-stream"), "{seen}");
    client.submit("email", &serde_json::json!({})).await.expect("submits");
    while !seen.contains("event: change") {
        let n = stream.read(&mut buffer).await.expect("reads events");
        assert!(n > 0, "the stream ended before a change: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    stop.send(()).expect("the server listens for its stop");
    // The open stream ends, so the graceful shutdown completes.
    let mut rest = Vec::new();
    let _ = stream.read_to_end(&mut rest).await;
    serving.await.expect("the server task").expect("serving ends cleanly");
}

#[tokio::test]
async fn every_page_renders_on_postgres() {
    let factory = PostgresFactory::from_test_server().expect("the Postgres test server");
    let (client, _fresh) = fresh(&factory).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let failed = failed_task(&client, "explode").await;
    let running = client
        .submit("render", &serde_json::json!({"html": "<script>x()</script>"}))
        .queue("pdf")
        .await
        .expect("submits");
    let worker = cairnq_testkit::support::session(&client, "worker-7", std::time::Duration::from_secs(60));
    let pdf = cairnq_core::store::ClaimDraw::new(vec!["pdf".into()]);
    worker.claim(vec![pdf], vec![]).await.expect("claims");
    worker.progress(&running.id, Some(0.5), Some("page 3 of 6")).await.expect("progress");
    let overview = http(addr, "GET", "/", &[], "").await;
    assert_eq!(overview.status, 200, "{}", overview.body);
    assert!(overview.body.contains("page 3 of 6") && overview.body.contains("worker-7"), "running tasks with progress");
    let workers = http(addr, "GET", "/workers", &[], "").await;
    assert!(workers.body.contains("worker-7"), "{}", workers.body);
    let tasks = http(addr, "GET", "/tasks?status=failed", &[], "").await;
    assert!(tasks.body.contains(&failed.id) && !tasks.body.contains(&running.id), "{}", tasks.body);
    let detail = http(addr, "GET", &format!("/tasks/{}", running.id), &[], "").await;
    assert!(detail.body.contains("&lt;script&gt;x()&lt;/script&gt;") && !detail.body.contains("<script>x()"));
    assert!(detail.body.contains("id=\"cancel\""), "a running task can be canceled");
}
