//! What the pages do for a person at the keyboard: an action on selected
//! rows lands back on the list it was taken on, a login returns to the page
//! asked for (and only to a page of this dashboard), the task list says why
//! a task failed, the login cookie never holds the token itself, the
//! limits page shows what runs and waits under each limit, and a task's
//! page lists its durable steps and draws its flow.

mod common;

use std::time::Duration;

use cairnq_core::store::ClaimDraw;
use cairnq_core::{CairnQ, ErrorEnvelope, Json, Limit, TaskStatus};
use cairnq_web::WebOptions;
use common::{FORM, failed_task, form_body, hidden_fields, http, sqlite_client, start};
use serde_json::json;

#[tokio::test]
async fn an_action_on_selected_rows_returns_to_the_filtered_list() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let failed = failed_task(&client, "explode").await;
    let list = "/tasks?queue=failing&status=failed&name=explode&limit=20";
    let page = http(addr, "GET", list, &[], "").await;
    assert_eq!(page.status, 200, "{}", page.body);

    // What a browser sends when the row is ticked and Retry pressed.
    let mut fields = hidden_fields(&page.body, "selection");
    fields.push(("id".into(), failed.id.clone()));
    fields.push(("action".into(), "retry".into()));
    let own = format!("http://{addr}");
    let done = http(addr, "POST", "/tasks/bulk", &[("Origin", &own), FORM], &form_body(&fields)).await;
    assert_eq!(done.status, 303, "{}", done.body);
    let back = done.header("location").expect("a redirect");
    assert!(
        back.starts_with("/tasks?name=explode&queue=failing&status=failed&limit=20&notice="),
        "back on the same list: {back}"
    );
    assert_eq!(client.get(&failed.id).await.expect("reads").expect("exists").status, TaskStatus::Queued);

    // The fields are rebuilt from what parses, never echoed: no way out.
    let body = "scope=selected&action=retry&queue=a%2F%2Fevil.example&next=http%3A%2F%2Fevil.example";
    let odd = http(addr, "POST", "/tasks/bulk", &[("Origin", &own), FORM], body).await;
    assert_eq!(odd.header("location").map(|l| l.starts_with("/tasks?queue=a%2F%2Fevil.example&notice=")), Some(true));

    // A value with a space or a separator in it comes back as the same value
    // (form-encoded, as the filter form itself sends it).
    let spaced =
        http(addr, "POST", "/tasks/bulk", &[("Origin", &own), FORM], "scope=selected&action=retry&queue=a%20b%26c")
            .await;
    let back = spaced.header("location").expect("a redirect").to_string();
    assert!(back.starts_with("/tasks?queue=a+b%26c&notice="), "{back}");
    let list = http(addr, "GET", &back, &[], "").await;
    assert!(list.body.contains(r#"name="queue" value="a b&amp;c""#), "the filter reads back as sent: {}", list.body);
}

/// A token good enough for a network bind.
const TOKEN: &str = "correct-horse-battery-staple";

/// A dashboard that requires [`TOKEN`], on loopback.
async fn guarded(client: CairnQ) -> std::net::SocketAddr {
    start(client, WebOptions::new().token(TOKEN)).await
}

#[tokio::test]
async fn a_login_returns_to_the_page_asked_for_and_only_to_a_page_of_the_dashboard() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let addr = guarded(sqlite_client(&dir).await).await;
    let asked = http(addr, "GET", "/tasks?queue=a%20b&status=failed", &[], "").await;
    assert_eq!(asked.status, 303);
    let login = asked.header("location").expect("sent to log in").to_string();
    assert_eq!(login, "/login?next=%2Ftasks%3Fqueue%3Da%2520b%26status%3Dfailed");
    let page = http(addr, "GET", &login, &[], "").await;
    let mut fields = hidden_fields(&page.body, "login");
    assert_eq!(fields, [("next".to_string(), "/tasks?queue=a%20b&status=failed".to_string())], "{}", page.body);

    // A wrong token keeps where the user was going.
    fields.push(("token".into(), "not-the-token-at-all".into()));
    let wrong = http(addr, "POST", "/login", &[FORM], &form_body(&fields)).await;
    assert_eq!(wrong.status, 401);
    fields = hidden_fields(&wrong.body, "login");
    fields.push(("token".into(), TOKEN.into()));
    let done = http(addr, "POST", "/login", &[FORM], &form_body(&fields)).await;
    assert_eq!(done.status, 303, "{}", done.body);
    assert_eq!(done.header("location"), Some("/tasks?queue=a%20b&status=failed"), "back where the user was going");

    for next in [
        "//evil.example/",
        "http://evil.example/",
        "https:/evil.example",
        "/\\evil.example",
        "\\\\evil.example",
        "javascript:alert(1)",
        "evil.example",
        "/tasks\r\nSet-Cookie: x=1",
        "/tasks\tx",
        "",
    ] {
        let body = form_body(&[("token".into(), TOKEN.into()), ("next".into(), next.into())]);
        let elsewhere = http(addr, "POST", "/login", &[FORM], &body).await;
        assert_eq!(elsewhere.status, 303, "{next:?}: {}", elsewhere.body);
        assert_eq!(elsewhere.header("location"), Some("/"), "{next:?} is not a local path");
        let page = http(addr, "GET", &format!("/login?{}", form_body(&[("next".into(), next.into())])), &[], "").await;
        assert!(hidden_fields(&page.body, "login").is_empty(), "{next:?} is not carried: {}", page.body);
    }
}

#[tokio::test]
async fn the_task_list_says_why_a_task_failed_as_text() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let failed = failed_task(&client, "explode").await;
    let queued = client.submit("email", &serde_json::json!({})).await.expect("submits");
    let page = http(addr, "GET", "/tasks", &[], "").await;
    assert!(page.body.contains("<th>Error</th>"), "an error column: {}", page.body);
    let row = |id: &str| {
        let at = page.body.find(&format!("data-id=\"{id}\"")).expect("the task's row");
        page.body[at..].split("</tr>").next().unwrap_or("").to_string()
    };
    let failed_row = row(&failed.id);
    assert!(
        failed_row.contains(">the handler &lt;b&gt;failed&lt;/b&gt;</span></td>"),
        "the envelope's message, escaped: {failed_row}"
    );
    assert!(!failed_row.contains("\"type\"") && !failed_row.contains("<b>"), "not the JSON, no markup: {failed_row}");
    assert!(row(&queued.id).contains("<td class=\"error\"></td>"), "nothing for a task that did not fail");
}

#[tokio::test]
async fn a_short_token_is_refused_and_the_cookie_holds_a_session_not_the_token() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    for weak in ["abc", "fifteen-chars15"] {
        let refused = cairnq_web::bind(client.clone(), WebOptions::new().token(weak)).await;
        let Err(error) = refused else { panic!("{weak:?} was accepted") };
        assert!(matches!(error, cairnq_web::WebError::WeakToken { length } if length == weak.len()), "{error:?}");
        assert!(error.to_string().contains("use at least 16"), "{error}");
        assert!(cairnq_web::router(client.clone(), &WebOptions::new().token(weak)).is_err(), "mounted too");
    }

    let addr = guarded(client.clone()).await;
    let login = http(addr, "POST", "/login", &[FORM], &format!("token={TOKEN}")).await;
    assert_eq!(login.status, 303, "{}", login.body);
    let set = login.header("set-cookie").expect("a login cookie");
    assert!(!set.contains(TOKEN), "the cookie never holds the token: {set}");
    let cookie = set.split(';').next().unwrap_or("").to_string();
    assert_eq!(http(addr, "GET", "/tasks", &[("Cookie", &cookie)], "").await.status, 200, "the session lets in");
    let (name, _) = cookie.split_once('=').expect("name=value");
    let raw = format!("{name}={TOKEN}");
    assert_eq!(http(addr, "GET", "/tasks", &[("Cookie", &raw)], "").await.status, 303, "the token is no cookie");
    // Another dashboard with the same token has a key of its own.
    let other = guarded(client).await;
    assert_eq!(http(other, "GET", "/tasks", &[("Cookie", &cookie)], "").await.status, 303, "not valid elsewhere");
}

/// The row of `page`'s table whose `data-limit` is `key` (as rendered).
fn limit_row<'p>(page: &'p str, key: &str) -> &'p str {
    let start = page.find(&format!("data-limit=\"{key}\"")).unwrap_or_else(|| panic!("no row for {key}: {page}"));
    let row = &page[start..];
    &row[..row.find("</tr>").expect("the row ends")]
}

/// The limits page lists every limit with its bounds, the tasks running
/// and waiting under it and when its rate next admits a start; a key is
/// any text, so it is escaped.
#[tokio::test]
async fn the_limits_page_shows_what_runs_and_waits_under_each_limit() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let empty = http(addr, "GET", "/limits", &[], "").await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert!(empty.body.contains("No limits set"), "{}", empty.body);

    let evil = "<script>alert(1)</script>:";
    client.set_limit(&Limit::new(format!("{evil}*")).concurrency(1)).await.expect("set a limit");
    client.set_limit(&Limit::new("api").rate(10, Duration::from_secs(60))).await.expect("set a limit");
    for key in [format!("{evil}7"), "api".to_string()] {
        for _ in 0..2 {
            client.submit("limited", &json!({})).limit_key(&key).await.expect("submit");
        }
    }
    let worker = client.worker_session("w-limits", Duration::from_secs(60)).expect("a session");
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()]).limit(10)], vec![]).await;
    assert_eq!(claimed.expect("claim").len(), 2, "one of each key");

    let page = http(addr, "GET", "/limits", &[], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(r#"<a href="/limits">Limits</a>"#), "in the navigation: {}", page.body);
    assert!(!page.body.contains("<script>alert"), "a key is never markup: {}", page.body);
    let escaped = "&lt;script&gt;alert(1)&lt;/script&gt;:*";
    let tenants = limit_row(&page.body, escaped);
    assert!(tenants.contains(&format!("<code>{escaped}</code>")), "{tenants}");
    assert!(tenants.contains(r#"<td class="num running">1</td><td class="num waiting">1</td>"#), "{tenants}");
    let api = limit_row(&page.body, "api");
    assert!(api.contains("10 per 1m") && api.contains(r#"<td class="num running">1</td>"#), "{api}");
    assert!(api.contains(r#"<td class="next"><time"#) && api.contains("(in "), "the rate admits next later: {api}");
}

/// A task's page lists its durable steps (name, attempt, value or error),
/// every one of them escaped; a task without steps has no such section.
#[tokio::test]
async fn a_task_page_lists_its_steps_escaped() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let task = client.submit("checkout", &json!({})).await.expect("submit");
    let plain = client.submit("other", &json!({})).await.expect("submit");
    let worker = client.worker_session("w-steps", Duration::from_secs(60)).expect("a session");
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["checkout".into()]);
    assert_eq!(worker.claim(vec![draw], vec![]).await.expect("claim").len(), 1);
    let evil = "<script>alert(1)</script>";
    worker.save_step(&task.id, 1, evil, Ok(Json::from(json!({"html": "<b>bold</b>"})))).await.expect("a value");
    let declined = ErrorEnvelope::new("declined", "card <i>declined</i>");
    worker.save_step(&task.id, 1, "charge", Err(&declined)).await.expect("an error");

    let page = http(addr, "GET", &format!("/tasks/{}", task.id), &[], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("<h2>Steps</h2>"), "{}", page.body);
    assert!(!page.body.contains(evil) && !page.body.contains("<b>bold") && !page.body.contains("<i>"), "{}", page.body);
    let row = |name: &str| {
        let at = page.body.find(&format!("data-step=\"{name}\"")).unwrap_or_else(|| panic!("a row for {name}"));
        page.body[at..].split("</tr>").next().unwrap_or("").to_string()
    };
    let valued = row("&lt;script&gt;alert(1)&lt;/script&gt;");
    assert!(valued.contains("<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>"), "{valued}");
    assert!(valued.contains("&lt;b&gt;bold&lt;/b&gt;") && valued.contains(r#"<td class="num">1</td>"#), "{valued}");
    let failed = row("charge");
    assert!(failed.contains("declined: card &lt;i&gt;declined&lt;/i&gt;"), "{failed}");

    let none = http(addr, "GET", &format!("/tasks/{}", plain.id), &[], "").await;
    assert!(!none.body.contains("<h2>Steps</h2>"), "no steps, no section");
}

/// A task submitted after others says on its page how many it still waits
/// for, and lists them (names escaped) with their status.
#[tokio::test]
async fn a_waiting_task_says_what_it_waits_for() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let first = client.submit("<b>first</b>", &json!({})).await.expect("submit");
    let second = client.submit("second", &json!({})).await.expect("submit");
    let waiting = client.submit("join", &json!({})).after([&first.id, &second.id]).await.expect("submit");
    let page = http(addr, "GET", &format!("/tasks/{}", waiting.id), &[], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains("waiting for 2 of 2 tasks"), "{}", page.body);
    assert!(page.body.contains("when its dependencies end"), "{}", page.body);
    assert!(page.body.contains("&lt;b&gt;first&lt;/b&gt;") && !page.body.contains("<b>first"), "escaped");
    assert!(page.body.contains(&second.id), "the dependencies are listed");
    let plain = http(addr, "GET", &format!("/tasks/{}", first.id), &[], "").await;
    assert!(!plain.body.contains("Waits for"), "a task without dependencies says nothing of them");
}

/// A task's page draws the flow of its root as nested lists (children
/// under their parent, names escaped, each node linked, the page's own
/// task marked), with a waiting task's wait and dependencies; the partial
/// re-read the live updates make shows a node's new status; a task alone
/// in its flow has no such section.
#[tokio::test]
async fn a_task_page_draws_its_flow() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let root = client.submit("<i>split</i>", &json!({})).await.expect("submit");
    let chunk = client.submit("chunk", &json!({})).child_of(&root).await.expect("a child");
    let piece = client.submit("piece", &json!({})).child_of(&chunk).await.expect("a grandchild");
    let join = client.submit("merge", &json!({})).child_of(&root).after([&chunk.id]).await.expect("the join");
    let alone = client.submit("alone", &json!({})).await.expect("submit");

    let page = http(addr, "GET", &format!("/tasks/{}", chunk.id), &[], "").await;
    assert_eq!(page.status, 200, "{}", page.body);
    let at = page.body.find(r#"<div id="flow">"#).unwrap_or_else(|| panic!("a flow section: {}", page.body));
    let flow = &page.body[at..];
    assert!(flow.contains("&lt;i&gt;split&lt;/i&gt;") && !page.body.contains("<i>split"), "escaped: {flow}");
    assert_eq!(flow.matches(r#"<ul class="flow">"#).count(), 3, "root, its children, the chunk's child: {flow}");
    let place =
        |id: &str| flow.find(&format!(r#"href="/tasks/{id}""#)).unwrap_or_else(|| panic!("{id} linked: {flow}"));
    assert!(place(&root.id) < place(&chunk.id) && place(&chunk.id) < place(&piece.id), "{flow}");
    assert!(place(&piece.id) < place(&join.id), "the grandchild under its parent, before the join: {flow}");
    assert!(flow.contains(&format!(r#"data-task="{}" class="current""#, chunk.id)), "the page's task marked: {flow}");
    let join_item = &flow[flow.find(&format!(r#"data-task="{}""#, join.id)).expect("the join")..];
    assert!(join_item.contains("waiting for 1 of 1 task") && join_item.contains("after: "), "{join_item}");

    let worker = client.worker_session("w-flow", Duration::from_secs(60)).expect("a session");
    let draw = ClaimDraw::new(vec!["default".into()]).names(vec!["chunk".into()]);
    assert_eq!(worker.claim(vec![draw], vec![]).await.expect("claim").len(), 1);
    worker.complete(&chunk.id, json!({"ok": true})).await.expect("complete");
    let partial = http(addr, "GET", &format!("/tasks/{}", root.id), &[("x-cairnq-partial", "1")], "").await;
    let item = &partial.body[partial.body.find(&format!(r#"data-task="{}""#, chunk.id)).expect("the chunk")..];
    assert!(item.starts_with(&format!(r#"data-task="{}">"#, chunk.id)), "not current on the root's page: {item}");
    assert!(item.split("<ul").next().unwrap_or("").contains("succeeded"), "its new status: {item}");
    assert!(!partial.body.contains("waiting for 1 of 1 task"), "the join no longer waits: {}", partial.body);

    let lone = http(addr, "GET", &format!("/tasks/{}", alone.id), &[], "").await;
    assert!(!lone.body.contains("<h2>Flow</h2>"), "a task alone has no flow section");
}
