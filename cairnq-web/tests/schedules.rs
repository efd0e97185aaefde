//! The schedules page and `/api/schedules` on both backends: listing,
//! pause / resume / trigger / delete (only what the API made), the guard's
//! refusals (read-only, token, another origin), names that hold markup,
//! and a store that keeps no schedules.

mod common;

use std::sync::Arc;
use std::time::Duration;

use cairnq_core::{CairnQ, Schedule, Store};
use cairnq_testkit::forwarding::{Forward, Forwarding};
use cairnq_testkit::postgres::PostgresFactory;
use cairnq_testkit::support::fresh;
use cairnq_web::WebOptions;
use common::{FORM, http, sqlite_client, sqlite_store, start};

/// A name that needs escaping in a page and encoding in a path.
const MARKED: &str = "night & <b>day</b>/1";

/// One schedule saved through the API (`MARKED`) and one declared on a
/// worker (`tick`).
async fn two_schedules(client: &CairnQ) {
    let nightly = Schedule::cron(MARKED, "0 3 * * *", "report").expect("a spec").tz("Europe/Berlin").expect("a zone");
    client.save_schedule(&nightly.queue("reports")).await.expect("saves");
    let tick = Schedule::every("tick", Duration::from_secs(60), "tick").expect("a spec");
    client.declare_schedules(&[tick]).await.expect("declares");
}

/// Every schedule endpoint and page action against `client`'s store.
async fn every_schedule_endpoint(client: CairnQ) {
    two_schedules(&client).await;
    let addr = start(client.clone(), WebOptions::new()).await;
    let listed = http(addr, "GET", "/api/schedules", &[], "").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    let listed = listed.json();
    let all = listed["schedules"].as_array().expect("a list");
    assert_eq!(all.len(), 2);
    let nightly = all.iter().find(|s| s["name"] == MARKED).expect("the saved one");
    for column in ["task_name", "queue", "spec", "tz", "next_fire_ms", "last_slot_ms", "missed", "paused", "owner"] {
        assert!(nightly.get(column).is_some(), "schedule JSON has the column {column}: {nightly}");
    }
    assert_eq!((nightly["tz"].as_str(), nightly["owner"].as_str()), (Some("Europe/Berlin"), Some("api")));

    let path = format!("/api/schedules/{}", encoded(MARKED));
    let paused = http(addr, "POST", &format!("{path}/pause"), &[], "").await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.json()["paused"], true);
    assert!(client.schedule(MARKED).await.expect("reads").expect("exists").paused);
    assert_eq!(http(addr, "POST", &format!("{path}/resume"), &[], "").await.json()["paused"], false);
    let fired = http(addr, "POST", &format!("{path}/trigger"), &[], "").await;
    assert_eq!(fired.status, 200, "{}", fired.body);
    let task_id = fired.json()["task"]["id"].as_str().expect("the fired task").to_string();
    assert_eq!(client.get(&task_id).await.expect("reads").expect("submitted").name, "report");

    let code_owned = http(addr, "POST", "/api/schedules/tick/delete", &[], "").await;
    assert_eq!(code_owned.status, 409, "a worker's code declares it again: {}", code_owned.body);
    assert!(client.schedule("tick").await.expect("reads").is_some(), "left in place");
    assert_eq!(http(addr, "POST", "/api/schedules/nope/pause", &[], "").await.status, 404);
    assert_eq!(http(addr, "POST", "/api/schedules/tick/explode", &[], "").await.status, 404);
    assert_eq!(http(addr, "GET", "/api/schedules/tick/pause", &[], "").await.status, 405, "actions are POST-only");

    let page = http(addr, "GET", "/schedules", &[], "").await;
    assert_eq!(page.status, 200);
    assert!(page.body.contains("night &amp; &lt;b&gt;day&lt;/b&gt;/1") && !page.body.contains("<b>day</b>"));
    assert!(page.body.contains("/schedules/tick/pause") && page.body.contains("/schedules/tick/trigger"));
    assert!(!page.body.contains("/schedules/tick/delete"), "no delete for a code-owned schedule");
    assert!(page.body.contains(&format!("/schedules/{}/delete", encoded(MARKED))));

    // The page's own forms: a same-origin POST acts, another origin's never.
    let own = format!("http://{addr}");
    let same = [("Origin", own.as_str()), FORM];
    let evil = [("Origin", "http://evil.example"), FORM];
    assert_eq!(http(addr, "POST", "/schedules/tick/pause", &evil, "").await.status, 403);
    assert!(!client.schedule("tick").await.expect("reads").expect("exists").paused, "the forged pause did nothing");
    let acted = http(addr, "POST", "/schedules/tick/pause", &same, "").await;
    assert_eq!(acted.status, 303, "{}", acted.body);
    assert!(client.schedule("tick").await.expect("reads").expect("exists").paused);
    let confirm = http(addr, "GET", &format!("/schedules/{}/delete", encoded(MARKED)), &[], "").await;
    assert!(confirm.status == 200 && confirm.body.contains("id=\"confirm-delete\""), "{}", confirm.body);
    let deleted = http(addr, "POST", &format!("/schedules/{}/delete", encoded(MARKED)), &same, "").await;
    assert_eq!(deleted.status, 303, "{}", deleted.body);
    assert!(client.schedule(MARKED).await.expect("reads").is_none(), "deleted");
    assert_eq!(http(addr, "POST", "/schedules/tick/delete", &same, "").await.status, 409);
}

/// A name in a path as the page writes it: every byte but unreserved ones
/// percent-encoded.
fn encoded(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[tokio::test]
async fn every_schedule_endpoint_on_sqlite() {
    let dir = tempfile::tempdir().expect("a temp dir");
    every_schedule_endpoint(sqlite_client(&dir).await).await;
}

#[tokio::test]
async fn every_schedule_endpoint_on_postgres() {
    let factory = PostgresFactory::from_test_server().expect("the Postgres test server");
    let (client, _fresh) = fresh(&factory).await;
    every_schedule_endpoint(client).await;
}

#[tokio::test]
async fn read_only_and_token_guard_every_schedule_action() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let client = sqlite_client(&dir).await;
    two_schedules(&client).await;
    let read_only = start(client.clone(), WebOptions::new().read_only()).await;
    let page = http(read_only, "GET", "/schedules", &[], "").await;
    assert!(page.status == 200 && page.body.contains("tick"), "{}", page.body);
    assert!(!page.body.contains("/schedules/tick/pause") && !page.body.contains("/delete"), "no buttons");
    for path in ["/api/schedules/tick/pause", "/api/schedules/tick/trigger", "/schedules/tick/pause"] {
        assert_eq!(http(read_only, "POST", path, &[FORM], "").await.status, 403, "{path}");
    }
    assert_eq!(http(read_only, "GET", "/schedules/tick/delete", &[], "").await.status, 403);
    assert!(!client.schedule("tick").await.expect("reads").expect("exists").paused, "nothing changed");

    let guarded = start(client.clone(), WebOptions::new().token("s3cret-s3cret-s3cret")).await;
    assert_eq!(http(guarded, "GET", "/api/schedules", &[], "").await.status, 401);
    assert_eq!(http(guarded, "POST", "/api/schedules/tick/pause", &[], "").await.status, 401);
    let bearer = [("Authorization", "Bearer s3cret-s3cret-s3cret")];
    assert_eq!(http(guarded, "POST", "/api/schedules/tick/pause", &bearer, "").await.status, 200);
    assert!(client.schedule("tick").await.expect("reads").expect("exists").paused);
}

/// A store without schedules: every operation but those forwarded.
struct NoSchedules(Arc<dyn Store>);

impl Forward for NoSchedules {
    fn inner(&self) -> &dyn Store {
        self.0.as_ref()
    }
}

#[tokio::test]
async fn a_store_without_schedules_says_so() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let inner: Arc<dyn Store> = Arc::new(sqlite_store(&dir).await);
    let addr = start(CairnQ::new(Forwarding(NoSchedules(inner))), WebOptions::new()).await;
    assert_eq!(http(addr, "GET", "/api/schedules", &[], "").await.status, 501);
    let page = http(addr, "GET", "/schedules", &[], "").await;
    assert!(page.status == 200 && page.body.contains("This store keeps no schedules."), "{}", page.body);
}
