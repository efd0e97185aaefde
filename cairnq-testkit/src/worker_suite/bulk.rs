//! The library's bulk actions and previews (`cancel_matching`,
//! `retry_matching`, their `count`, `purgeable`): the one rule every caller shares for
//! which tasks a filter takes, checked against the rows on each backend.

use std::collections::BTreeSet;
use std::time::Duration;

use cairnq_core::{Error, ListFilter, PurgeFilter, SubmitOptions, TaskSpec, TaskStatus};
use serde_json::json;

use super::support::fresh;
use crate::BackendFactory;

/// A filter takes the statuses its action moves (its own, or the
/// action's default), at most `cap` of them; a dry run reads and changes
/// nothing, a count says as much without reading the rows; a key is a
/// filter; a purge's preview is what it then deletes.
pub async fn bulk_actions_take_what_their_filter_matches(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let spec = |queue: &str, key: Option<&str>| {
        let options = SubmitOptions::new().queue(queue);
        let options = match key {
            Some(key) => options.key(key),
            None => options,
        };
        TaskSpec::new("resize", &json!({})).options(options)
    };
    let mut specs: Vec<TaskSpec> = (0..4).map(|_| spec("bulk-a", None)).collect();
    specs.push(spec("bulk-a", Some("bulk-k")));
    specs.extend([spec("bulk-b", None), spec("bulk-b", None)]);
    let tasks = client.submit_many(&specs).await.expect("submit");
    let queue_a = ListFilter::new().queue("bulk-a");
    let ids = |tasks: &[cairnq_core::Task]| tasks.iter().map(|t| t.id.clone()).collect::<BTreeSet<_>>();

    let refused = client.cancel_matching(&ListFilter::new(), 10).await;
    assert!(matches!(refused, Err(Error::Validation { field: "filter", .. })), "an empty filter: {refused:?}");
    let refused = client.cancel_matching(&queue_a.clone().status(TaskStatus::Failed), 10).await;
    assert!(matches!(refused, Err(Error::Validation { field: "status", .. })), "{refused:?}");

    let before = client.stats(None).await.expect("stats");
    let preview = client.cancel_matching(&queue_a, 10).dry_run().await.expect("preview");
    assert_eq!(ids(&preview.tasks), ids(&tasks[..5]), "queue bulk-a's five");
    assert!(!preview.capped);
    let capped = client.cancel_matching(&queue_a, 2).dry_run().await.expect("preview");
    assert_eq!((capped.tasks.len(), capped.capped), (2, true), "at most the cap, and it says more matched");
    assert_eq!(client.cancel_matching(&queue_a, 10).count().await.expect("count"), 5, "what the dry run read");
    assert_eq!(client.cancel_matching(&queue_a, 2).count().await.expect("count"), 3, "at most the cap and one more");
    assert_eq!(client.retry_matching(&queue_a, 10).count().await.expect("count"), 0, "none failed");
    let refused = client.retry_matching(&queue_a.clone().status(TaskStatus::Queued), 10).count().await;
    assert!(matches!(refused, Err(Error::Validation { field: "status", .. })), "refused as the retry is: {refused:?}");
    assert_eq!(client.stats(None).await.expect("stats"), before, "dry runs change nothing");

    let by_key = client.cancel_matching(&ListFilter::new().key("bulk-k"), 10).await.expect("cancel");
    assert_eq!(ids(&by_key.tasks), ids(&tasks[4..5]), "a key is a filter");
    assert_eq!(by_key.tasks[0].status, TaskStatus::Canceled);
    let failed_only = client.retry_matching(&queue_a, 10).await.expect("retry");
    assert!(failed_only.tasks.is_empty(), "without a status, a retry takes failed tasks, not canceled ones");
    let canceled = queue_a.clone().status(TaskStatus::Canceled);
    let retried = client.retry_matching(&canceled, 10).reset_attempt().await.expect("retry");
    assert_eq!(ids(&retried.tasks), ids(&tasks[4..5]));
    assert_eq!(retried.tasks[0].status, TaskStatus::Queued);

    let all_a = client.cancel_matching(&queue_a, 10).await.expect("cancel");
    assert_eq!((ids(&all_a.tasks), all_a.skipped.len()), (ids(&tasks[..5]), 0));
    assert_eq!(client.stats(Some("bulk-b")).await.expect("stats")["bulk-b"].queued, 2, "bulk-b untouched");

    tokio::time::sleep(Duration::from_millis(5)).await;
    let purge = PurgeFilter::new().queue("bulk-a");
    let doomed = client.purgeable(&purge).await.expect("preview");
    assert_eq!(ids(&doomed.tasks), ids(&tasks[..5]), "the canceled tasks of bulk-a");
    assert_eq!(client.purgeable(&purge.clone().limit(2)).await.expect("preview").tasks.len(), 2, "bounded");
    let purged: BTreeSet<String> = client.purge(&purge).await.expect("purge").into_iter().collect();
    assert_eq!(purged, ids(&doomed.tasks), "the preview is what the purge deletes");
    let live = client.purgeable(&PurgeFilter::new().status(TaskStatus::Queued)).await;
    assert!(matches!(live, Err(Error::Validation { field: "status", .. })), "{live:?}");
}
