//! Flow control on every backend (extension `ext_0006_limits`): limits as
//! data through the client, a task's limit key, and what claims admit under
//! them, from single claims read exactly to a fleet of workers draining
//! limited keys while every run is timed.

use std::time::Duration;

use cairnq_core::{Error, Limit};
use serde_json::json;

use super::support::fresh;
use crate::BackendFactory;

/// Limits round-trip through the client: set (create, then replace), read
/// (all, by key; prefix defaults by their own key), remove; bad limits and
/// bad task keys are refused with the field named and write nothing; a
/// submit's limit key lands in its metadata beside the caller's.
pub async fn limits_are_set_read_and_removed(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    assert!(client.limits().await.expect("read limits").is_empty());
    let api = Limit::new("api:maps").concurrency(5).rate(100, Duration::from_secs(60)).burst(10);
    let tenants = Limit::new("tenant:*").concurrency(2);
    let stored = client.set_limit(&api).await.expect("set a limit");
    assert_eq!(stored.limit, api);
    assert!(stored.updated_at_ms > 0, "stamped with the store's clock");
    client.set_limit(&tenants).await.expect("set a prefix default");
    let all = client.limits().await.expect("read limits");
    assert_eq!(all.iter().map(|l| l.limit.clone()).collect::<Vec<_>>(), [api.clone(), tenants.clone()]);
    assert_eq!(client.limit("tenant:*").await.expect("read one").map(|l| l.limit), Some(tenants.clone()));
    assert_eq!(client.limit("tenant:42").await.expect("read one"), None, "read by the stored key only");

    let lowered = Limit::new("api:maps").concurrency(1);
    client.set_limit(&lowered).await.expect("replace a limit");
    assert_eq!(client.limit("api:maps").await.expect("read one").map(|l| l.limit), Some(lowered));

    for (bad, field) in [
        (Limit::new("a*b").concurrency(1), "key"),
        (Limit::new("fresh").concurrency(0), "concurrency"),
        (Limit::new("fresh").concurrency(1).burst(3), "burst"),
        (Limit::new("fresh"), "limit"),
    ] {
        match client.set_limit(&bad).await {
            Err(Error::Validation { field: got, .. }) => assert_eq!(got, field, "{bad:?}"),
            other => panic!("{bad:?} was not refused: {other:?}"),
        }
    }
    assert_eq!(client.limits().await.expect("read limits").len(), 2, "a refused limit writes nothing");

    assert!(client.remove_limit("api:maps").await.expect("remove"));
    assert!(!client.remove_limit("api:maps").await.expect("remove again"), "nothing left to remove");
    assert_eq!(client.limit("api:maps").await.expect("read one"), None);

    let task = client
        .submit("bill", &json!({}))
        .metadata(json!({"region": "eu", "limit_key": "old"}))
        .limit_key("tenant:7")
        .await
        .expect("submit with a limit key");
    let read = client.get(&task.id).await.expect("get").expect("the task exists");
    assert_eq!(read.limit_key().as_deref(), Some("tenant:7"));
    assert_eq!(read.metadata.to_value().expect("JSON"), json!({"region": "eu", "limit_key": "tenant:7"}));
    for bad in ["tenant:*", "", &"k".repeat(201)] {
        let refused = client.submit("bill", &json!({})).limit_key(bad).await;
        assert!(matches!(refused, Err(Error::Validation { field: "limit_key", .. })), "{bad:?}: {refused:?}");
    }
}
