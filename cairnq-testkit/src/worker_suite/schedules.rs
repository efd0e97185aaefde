//! Schedules on every backend: worker processes sharing one schedule fire
//! each slot exactly once (a SIGKILL included), and the client API. The
//! policies are `schedule_policies`'s, the worker's own part
//! `schedule_workers`'s.

use std::time::Duration;

use cairnq_core::store::{SaveScheduleParams, ScheduleQuery};
use cairnq_core::{CairnQ, ListFilter, Schedule, ScheduleOwner, ScheduleSpec, Task, slot_key};
use serde_json::json;

use super::schedule_policies::slot_of;
use super::support::fresh;
use crate::BackendFactory;
use crate::child::{ChildArgs, ChildMode, ChildProcess};
use crate::support::schedules_of;

/// How long the fleet shares the schedule, as the issue asks.
const WINDOW: Duration = Duration::from_secs(30);

/// How long a worker process may take to start serving: far more than it
/// takes, on a loaded 2-core machine too.
const START_PATIENCE: Duration = Duration::from_secs(60);

/// The slot of each fired task of `task_name`, from its metadata.
async fn fired_slots(client: &CairnQ, task_name: &str) -> Vec<(i64, Task)> {
    let page = client.list(&ListFilter::new().name(task_name).limit(10_000)).await.expect("list the fired tasks");
    let mut slots: Vec<(i64, Task)> = page
        .tasks
        .into_iter()
        .map(|task| {
            let meta = task.metadata.to_value().expect("metadata is JSON");
            assert_eq!(meta["schedule"], json!("tick"), "a fired task names its schedule");
            (slot_of(&task), task)
        })
        .collect();
    slots.sort_by_key(|(slot, _)| *slot);
    slots
}

/// Four worker processes declare `tick` (`@every 1s`) on one database and
/// fire it for 30 s (`WINDOW`); one is SIGKILLed midway and restarted. Every
/// slot from the first fire to the last got exactly one task (no key twice,
/// no gap: the three others fire the slots of the downtime, on time, so the
/// policy never has to), keyed `schedule:tick:SLOT_MS`. Skipped without a
/// locator.
pub async fn a_shared_schedule_fires_each_slot_once_across_processes(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let Some(locator) = fresh.locator.clone() else {
        eprintln!("skipped: {} stores cannot be opened by another process", factory.name());
        return;
    };
    let mut args = ChildArgs::new(locator, ChildMode::Noop);
    (args.schedule, args.poll_ms) = (Some("tick=@every 1s".into()), 200);
    let spawn = || ChildProcess::spawn(&args).expect("start a worker process");
    let mut fleet: Vec<ChildProcess> = (0..4).map(|_| spawn()).collect();
    for child in &mut fleet {
        child.line_starting("ready ", START_PATIENCE).await.expect("the worker serves");
    }
    tokio::time::sleep(WINDOW / 2).await;
    fleet[0].kill().expect("SIGKILL one worker");
    tokio::time::sleep(Duration::from_millis(700)).await;
    fleet[0] = spawn();
    fleet[0].line_starting("ready ", START_PATIENCE).await.expect("the replacement serves");
    tokio::time::sleep(WINDOW / 2).await;
    for child in &fleet {
        child.signal("TERM").expect("SIGTERM a worker");
    }
    for child in &mut fleet {
        assert!(child.wait(Duration::from_secs(30)).await.expect("the worker exits").success());
    }
    let slots = fired_slots(&client, "noop").await;
    // The first slot may come up to a second after the last worker is
    // ready, the last fired one a second before the stop, and a busy host
    // may be a second late with it: whatever came later is not fired.
    let expected = WINDOW.as_secs() as usize - 3;
    assert!(slots.len() >= expected, "{} slots fired in {WINDOW:?}, expected at least {expected}", slots.len());
    for pair in slots.windows(2) {
        assert_eq!(pair[1].0 - pair[0].0, 1_000, "consecutive slots, each once: {:?}", (pair[0].0, pair[1].0));
    }
    for (slot, task) in &slots {
        let by_key = client.get_by_key(&slot_key("tick", *slot)).await.expect("read by key");
        assert_eq!(by_key.map(|t| t.id), Some(task.id.clone()), "slot {slot} is keyed");
    }
    let stored = client.schedule("tick").await.expect("read").expect("still declared");
    assert_eq!((stored.owner, stored.missed), (ScheduleOwner::Code, 0));
}

/// Save (create, unchanged, changed), get, list, pause, trigger (paused
/// too), resume, declare (undeclared code-owned ones reported and kept),
/// delete; bad input refused before anything is written.
pub async fn schedules_are_managed_through_the_client(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let hourly = Schedule::cron("hourly", "@hourly", "report").expect("valid").payload(&json!({"n": 1})).expect("json");
    let saved = client.save_schedule(&hourly).await.expect("create");
    assert_eq!((saved.owner, saved.paused, saved.last_slot_ms), (ScheduleOwner::Api, false, None));
    assert_eq!(saved.next_fire_ms % 3_600_000, 0, "the next whole hour");
    // What an update keeps of the next fire: `a_redeclared_schedule_keeps_its_next_fire_...`.
    let again = client.save_schedule(&hourly.clone().queue("other")).await.expect("update");
    assert_eq!(again.schedule.queue.as_str(), "other");
    let mut yearly = hourly.clone().queue("other");
    yearly.spec = ScheduleSpec::parse("0 0 1 1 *", "Europe/Berlin").expect("spec");
    let moved = client.save_schedule(&yearly).await.expect("change the spec");
    assert_ne!(moved.next_fire_ms, saved.next_fire_ms, "a changed spec recomputes the next fire");
    assert_eq!(client.schedule("hourly").await.expect("get"), Some(moved.clone()));

    assert!(client.pause_schedule("hourly").await.expect("pause").expect("exists").paused);
    let task = client.trigger_schedule("hourly").await.expect("trigger").expect("exists");
    assert_eq!((task.name.as_str(), task.queue.as_str()), ("report", "other"));
    assert_eq!(task.payload.to_value().expect("json"), json!({"n": 1}));
    let slot = task.metadata.to_value().expect("json")["schedule_slot_ms"].as_i64().expect("slot");
    assert_eq!(client.get_by_key(&slot_key("hourly", slot)).await.expect("by key").map(|t| t.id), Some(task.id));
    let resumed = client.resume_schedule("hourly").await.expect("resume").expect("exists");
    assert!(!resumed.paused);
    assert_eq!(resumed.next_fire_ms, moved.next_fire_ms, "the trigger left the regular slots alone");

    let gone = Schedule::every("gone", Duration::from_secs(60), "x").expect("valid");
    let kept = Schedule::every("kept", Duration::from_secs(60), "x").expect("valid");
    client.declare_schedules(&[gone.clone(), kept.clone()]).await.expect("declare both");
    let declared = client.declare_schedules(&[kept]).await.expect("declare one");
    assert_eq!(declared.undeclared, vec!["gone".to_string()]);
    let names: Vec<String> = client.schedules().await.expect("list").into_iter().map(|s| s.schedule.name).collect();
    assert_eq!(names, ["gone", "hourly", "kept"], "an undeclared schedule stays");

    assert!(client.delete_schedule("gone").await.expect("delete"));
    assert!(!client.delete_schedule("gone").await.expect("delete again"));
    assert_eq!(client.schedule("gone").await.expect("get"), None);
    assert_eq!(client.trigger_schedule("gone").await.expect("trigger"), None);
    assert!(client.pause_schedule("gone").await.expect("pause").is_none());

    let bad = Schedule::every("bad", Duration::from_secs(60), "x").expect("valid").max_attempts(0);
    assert!(client.save_schedule(&bad).await.is_err());
    assert!(Schedule::cron("bad", "@every 10ms", "x").is_err());
    assert!(Schedule::cron("", "@daily", "x").is_err());
    assert_eq!(client.schedule("bad").await.expect("get"), None, "refused input wrote nothing");

    // A row a foreign or broken writer left (a spec this build cannot
    // parse), due now: reported by name, the other schedules unaffected.
    let mut row =
        schedules_of(fresh.store.as_ref()).schedules(&ScheduleQuery::named("kept")).await.expect("read").rows.remove(0);
    (row.name, row.spec, row.next_fire_ms) = ("broken".into(), "every tuesday".into(), 0);
    schedules_of(fresh.store.as_ref())
        .save_schedule(&SaveScheduleParams::new(row))
        .await
        .expect("a store takes any text");
    let report = client.fire_due_schedules().await.expect("the pass goes on");
    let failed: Vec<(&str, String)> = report.failed.iter().map(|(n, e)| (n.as_str(), e.to_string())).collect();
    assert!(failed.len() == 1 && failed[0].0 == "broken" && failed[0].1.contains("schedule broken"), "{failed:?}");
    assert!(client.schedule("broken").await.expect_err("unreadable").to_string().contains("schedule broken"));
}
