//! What each schedule policy promises, on every backend: catch-up after a
//! ten-minute outage (on a clock the test moves, and on the store's own
//! clock with the outage written into the row), overlap skip while the
//! previous fire is queued or running, the compare-and-set that lets one
//! process win a slot, the next fire a re-declaration keeps or recomputes,
//! and jitter.

use std::collections::BTreeMap;
use std::time::Duration;

use cairnq_core::store::{ClaimDraw, FireScheduleParams, PauseScheduleParams, ScheduleQuery};
use cairnq_core::{
    CairnQ, CatchUp, FireReport, Json, ListFilter, Overlap, Schedule, ScheduleSpec, Store, SubmitOptions, Task,
    TaskStatus, slot_key,
};

use super::support::{eventually, fresh, session};
use crate::BackendFactory;
use crate::support::{ManualClock, count, schedules_of};

const MINUTE: i64 = 60_000;

/// The slot a fired task was fired for, from its metadata.
pub(super) fn slot_of(task: &Task) -> i64 {
    let meta = task.metadata.to_value().expect("metadata is JSON");
    meta["schedule_slot_ms"].as_i64().expect("a fired task names its slot")
}

/// The store's now (the database clock on Postgres).
async fn store_now(store: &dyn Store) -> i64 {
    schedules_of(store).schedules(&ScheduleQuery::all()).await.expect("read the store's clock").now_ms
}

/// A once-a-minute spec (seconds first) whose slots lie half a minute from
/// the store's now, and its newest slot before now: for the next 20 s no
/// slot enters or leaves the 10 s on-time grace, so a test on a clock it
/// cannot move (the database's) still knows exactly what is due.
pub(super) async fn half_a_minute_off(store: &dyn Store) -> (String, i64) {
    let now = store_now(store).await;
    let spec = format!("{} * * * * *", (now / 1000 + 30) % 60);
    let newest = ScheduleSpec::parse(&spec, "UTC").expect("valid").prev_before(now + 1).expect("in range");
    (spec, newest.expect("a slot in the last minute"))
}

/// Writes an outage into the row: `name` holds `slot` as its next fire, a
/// slot nobody fired, as if every process had been down since.
pub(super) async fn rewind(store: &dyn Store, name: &str, slot: i64) {
    let params = PauseScheduleParams::resume(name).next_fire_ms(slot);
    schedules_of(store).pause_schedule(&params).await.expect("rewind").expect("the schedule exists");
}

/// Saves `skip`, `latest` and `all` (window 5 min, cap 3) on `spec`, each
/// firing a task of its own name.
async fn save_policies(client: &CairnQ, spec: &str) -> Vec<i64> {
    let all = CatchUp::All { window: Duration::from_secs(300), max: 3 };
    let mut next_fires = Vec::new();
    for (name, policy) in [("skip", CatchUp::Skip), ("latest", CatchUp::Latest), ("all", all)] {
        let schedule = Schedule::cron(name, spec, name).expect("valid").catch_up(policy);
        next_fires.push(client.save_schedule(&schedule).await.expect("save").next_fire_ms);
    }
    next_fires
}

/// What the three policies of [`save_policies`] fired after missing the
/// eleven once-a-minute slots up to `newest`, all older than the grace:
/// `skip` none (11 missed), `latest` `newest` (10 missed), `all` the newest
/// three within its window (8 missed); each fires next a minute after
/// `newest`, and a second pass fires nothing.
async fn assert_caught_up(client: &CairnQ, report: &FireReport, newest: i64) {
    assert_eq!((report.lost, report.failed.len(), report.missed), (0, 0, 11 + 10 + 8));
    let mut fired: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for task in &report.fired {
        let slot = slot_of(task);
        fired.entry(task.name.clone()).or_default().push(slot - newest);
        let by_key = client.get_by_key(&slot_key(&task.name, slot)).await.expect("read by key");
        assert_eq!(by_key.map(|t| t.id), Some(task.id.clone()), "keyed by its slot");
    }
    let expected: BTreeMap<String, Vec<i64>> =
        [("all".to_string(), vec![-2 * MINUTE, -MINUTE, 0]), ("latest".to_string(), vec![0])].into();
    assert_eq!(fired, expected, "slots fired, relative to the newest missed one");
    for (name, missed) in [("skip", 11), ("latest", 10), ("all", 8)] {
        let info = client.schedule(name).await.expect("read").expect("exists");
        assert_eq!((info.next_fire_ms - newest, info.missed), (MINUTE, missed), "{name}");
    }
    assert!(client.fire_due_schedules().await.expect("again").fired.is_empty(), "nothing is due twice");
}

/// The catch-up policies after every process was down for ten minutes, on
/// a store whose clock the test moves (`clock` is `client`'s store's):
/// schedules saved at T0 (a whole minute) fire next at T0+60s; the clock
/// jumps to T0+690s, so slots T0+60s..=T0+660s (11) are older than the
/// on-time grace. Then `skip` fires none (11 missed), `latest` T0+660s (10
/// missed), `all` (window 5 min, cap 3) T0+540s, +600s and +660s (8
/// missed); each fires next at T0+720s, and a second pass fires nothing.
/// At T0+721s each fires exactly its on-time slot T0+720s.
pub async fn catch_up_after_an_outage(client: &CairnQ, clock: &ManualClock) {
    const T0: i64 = 1_700_000_040_000;
    clock.set(T0);
    assert_eq!(save_policies(client, "@every 60s").await, [T0 + MINUTE; 3]);
    clock.set(T0 + 690_000);
    let report = client.fire_due_schedules().await.expect("fire after the outage");
    assert_caught_up(client, &report, T0 + 11 * MINUTE).await;
    clock.set(T0 + 721_000);
    let report = client.fire_due_schedules().await.expect("fire on time");
    let mut on_time: Vec<(String, i64)> = report.fired.iter().map(|t| (t.name.clone(), slot_of(t) - T0)).collect();
    on_time.sort();
    let names = ["all", "latest", "skip"];
    assert_eq!(on_time, names.map(|n| (n.to_string(), 12 * MINUTE)).to_vec());
    assert_eq!(count(client, TaskStatus::Queued).await, 7, "4 caught up, 3 on time");
}

/// The same outage on the store's own clock (the database's on Postgres,
/// which no test can move): each schedule's row is rewound to hold the slot
/// ten minutes before its newest missed one, exactly what a row keeps when
/// no process fired it for ten minutes; then one pass fires what each
/// policy promises, as in [`catch_up_after_an_outage`].
pub async fn catch_up_after_an_outage_on_the_store_clock(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let (spec, newest) = half_a_minute_off(fresh.store.as_ref()).await;
    assert_eq!(save_policies(&client, &spec).await, [newest + MINUTE; 3], "the next slot after now");
    for name in ["skip", "latest", "all"] {
        rewind(fresh.store.as_ref(), name, newest - 10 * MINUTE).await;
    }
    let report = client.fire_due_schedules().await.expect("fire after the outage");
    assert_caught_up(&client, &report, newest).await;
    assert_eq!(count(&client, TaskStatus::Queued).await, 4);
}

/// With overlap skip, no slot fires while the previous fire's task is
/// running; the passed slots count as missed; once it finished, the next
/// slot fires.
pub async fn overlap_skip_holds_while_the_previous_fire_runs(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let first = first_overlapping_fire(&client).await;
    let worker = session(&client, "w1", Duration::from_secs(60));
    let claimed = worker.claim(vec![ClaimDraw::new(vec!["default".into()])], vec![]).await.expect("claim");
    assert_eq!(claimed.iter().map(|t| &t.id).collect::<Vec<_>>(), [&first.id]);
    assert_blocked_until(&client, &first, async {
        worker.succeed(&first.id, Json::null()).await.expect("finish it");
    })
    .await;
}

/// With overlap skip, a previous fire still queued (no worker took it yet)
/// blocks the next slots just as a running one does.
pub async fn overlap_skip_holds_while_the_previous_fire_is_queued(factory: &dyn BackendFactory) {
    let (client, _fresh) = fresh(factory).await;
    let first = first_overlapping_fire(&client).await;
    assert_blocked_until(&client, &first, async {
        client.cancel(&first.id).await.expect("cancel it");
    })
    .await;
}

/// Saves `tick` (`@every 1s`, overlap skip, tasks `ov`) and fires its first slot.
async fn first_overlapping_fire(client: &CairnQ) -> Task {
    let schedule = Schedule::cron("tick", "@every 1s", "ov").expect("valid").overlap(Overlap::Skip);
    client.save_schedule(&schedule).await.expect("save");
    fire_until_one(client).await
}

/// Two more slots pass over while `first` is live, nothing fires; once
/// `end` ended it, the next slot fires.
async fn assert_blocked_until(client: &CairnQ, first: &Task, end: impl Future<Output = ()>) {
    eventually("two more slots passed over", || async {
        client.fire_due_schedules().await.expect("fire");
        client.schedule("tick").await.expect("read").expect("exists").missed >= 2
    })
    .await;
    assert_eq!(count_named(client, "ov").await, 1, "nothing fired while the previous fire was live");
    end.await;
    let next = fire_until_one(client).await;
    assert_ne!(next.id, first.id);
    assert_eq!(count_named(client, "ov").await, 2);
}

/// Fires until a pass fires one task (a slot comes every second).
async fn fire_until_one(client: &CairnQ) -> Task {
    for _ in 0..300 {
        let report = client.fire_due_schedules().await.expect("fire");
        assert!(report.fired.len() <= 1, "one slot per pass here: {:?}", report.fired);
        if let Some(task) = report.fired.into_iter().next() {
            return task;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no slot fired in 30 s");
}

pub(super) async fn count_named(client: &CairnQ, name: &str) -> usize {
    client.list(&ListFilter::new().name(name).limit(10_000)).await.expect("list").tasks.len()
}

/// The store's fire is a compare-and-set: after another process won the
/// slot (and moved the next fire on), a fire still holding the old slot
/// answers "not fired", writes no task and moves nothing; so does a fire
/// of a paused schedule that does not ask to fire it anyway.
pub async fn a_fire_holding_a_stale_slot_changes_nothing(factory: &dyn BackendFactory) {
    let (client, fresh) = fresh(factory).await;
    let held = client.save_schedule(&every_minute("cas")).await.expect("save").next_fire_ms;
    let fire = |slot: i64| {
        let task = SubmitOptions::new().key(slot_key("cas", slot)).to_new_task("cas", Json::empty_object());
        FireScheduleParams::new("cas", held)
            .next_fire_ms(held + MINUTE)
            .last_slot_ms(Some(slot))
            .missed(3)
            .tasks(vec![task.expect("a valid task")])
    };
    let won = schedules_of(fresh.store.as_ref())
        .fire_schedule(&fire(held))
        .await
        .expect("fire")
        .expect("the first fire wins");
    assert_eq!(won.len(), 1);
    let stale =
        schedules_of(fresh.store.as_ref()).fire_schedule(&fire(held + 1)).await.expect("a stale fire is no error");
    assert_eq!(stale, None, "the slot was taken");
    client.pause_schedule("cas").await.expect("pause");
    let mut paused = fire(held + 2);
    paused.expected_ms = held + MINUTE;
    assert_eq!(
        schedules_of(fresh.store.as_ref()).fire_schedule(&paused).await.expect("fire"),
        None,
        "a paused row is not fired"
    );
    for refused in [held + 1, held + 2] {
        assert_eq!(client.get_by_key(&slot_key("cas", refused)).await.expect("by key"), None, "no task written");
    }
    assert_eq!(count_named(&client, "cas").await, 1);
    let info = client.schedule("cas").await.expect("read").expect("exists");
    assert_eq!((info.next_fire_ms, info.last_slot_ms, info.missed), (held + MINUTE, Some(held), 3), "the winner's");
}

pub(super) fn every_minute(name: &str) -> Schedule {
    Schedule::every(name, Duration::from_secs(60), name).expect("valid")
}

/// Declaring a schedule again (a worker restart) keeps the next fire the
/// row holds when spec and zone are unchanged, though recomputing would
/// give another (another process fired meanwhile); a changed zone or spec
/// recomputes it from the store's now.
pub async fn a_redeclared_schedule_keeps_its_next_fire_unless_its_spec_or_zone_changed(factory: &dyn BackendFactory) {
    const DAY: i64 = 24 * 60 * MINUTE;
    let (client, fresh) = fresh(factory).await;
    let nightly = Schedule::cron("nightly", "0 3 * * *", "report").expect("valid");
    let declared = |s: Schedule| {
        let client = client.clone();
        async move { client.declare_schedules(&[s]).await.expect("declare").saved.remove(0) }
    };
    let first = declared(nightly.clone()).await;
    let moved = FireScheduleParams::new("nightly", first.next_fire_ms).next_fire_ms(first.next_fire_ms + DAY);
    schedules_of(fresh.store.as_ref()).fire_schedule(&moved).await.expect("fire").expect("won");
    let again = declared(nightly.clone().queue("reports")).await;
    assert_eq!((again.next_fire_ms, again.schedule.queue.as_str()), (first.next_fire_ms + DAY, "reports"));
    let recomputed = nightly.spec.next_after(again.updated_at_ms).expect("in range");
    assert_ne!(recomputed, Some(again.next_fire_ms), "recomputing would have moved it: the test can fail");

    let berlin = declared(nightly.clone().tz("Europe/Berlin").expect("zone")).await;
    let in_berlin = ScheduleSpec::parse("0 3 * * *", "Europe/Berlin").expect("valid");
    assert_eq!(Some(berlin.next_fire_ms), in_berlin.next_after(berlin.updated_at_ms).expect("in range"));
    let mut at_four = nightly.clone();
    at_four.spec = ScheduleSpec::parse("0 4 * * *", "Europe/Berlin").expect("valid");
    let four = declared(at_four.clone()).await;
    assert_eq!(Some(four.next_fire_ms), at_four.spec.next_after(four.updated_at_ms).expect("in range"));
    assert_ne!(four.next_fire_ms, berlin.next_fire_ms);
}

/// Jitter delays each fired task by a random time up to the jitter from
/// when it is fired (its slot key unchanged): thirty slots caught up in
/// one fire all wait within the bound, not all equally.
pub async fn jitter_delays_each_fired_task_within_its_bound(factory: &dyn BackendFactory) {
    const JITTER: i64 = 10_000;
    let (client, fresh) = fresh(factory).await;
    let all = CatchUp::All { window: Duration::from_secs(3600), max: 100 };
    let schedule = Schedule::every("jit", Duration::from_secs(1), "jit").expect("valid").catch_up(all);
    let saved = client.save_schedule(&schedule.jitter(Duration::from_millis(JITTER as u64))).await.expect("save");
    rewind(fresh.store.as_ref(), "jit", saved.next_fire_ms - 30_000).await;
    let fired = client.fire_due_schedules().await.expect("fire").fired;
    assert!(fired.len() >= 30, "the missed slots and the due one: {}", fired.len());
    let mut delays = Vec::new();
    for task in &fired {
        assert!(slot_of(task) <= task.created_at_ms, "fired at or after its slot");
        let delay = task.run_at_ms - task.created_at_ms;
        assert!((0..=JITTER).contains(&delay), "a delay within the jitter: {delay} ms");
        delays.push(delay);
    }
    delays.dedup();
    assert!(delays.len() > 1, "each task draws its own delay: {delays:?}");
}
