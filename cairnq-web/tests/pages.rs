//! What the pages do for a person at the keyboard: an action on selected
//! rows lands back on the list it was taken on, a login returns to the page
//! asked for (and only to a page of this dashboard), the task list says why
//! a task failed, and the login cookie never holds the token itself.

mod common;

use cairnq_core::{CairnQ, TaskStatus};
use cairnq_web::WebOptions;
use common::{FORM, failed_task, form_body, hidden_fields, http, start};

async fn sqlite_client(dir: &tempfile::TempDir) -> CairnQ {
    let store = cairnq_sqlite::SqliteStore::open(dir.path().join("queue.db")).await.expect("opens the file");
    CairnQ::new(store)
}

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
}
