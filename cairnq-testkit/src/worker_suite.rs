//! The worker suite: real worker loops (and real worker processes) against
//! any backend, so SQLite, Postgres and third-party stores run the worker
//! through the same tests; beside them, the client-level tests the JSON
//! scenarios cannot express (concurrency, closed stores, killed processes).
//!
//! Every test is a `pub async fn(&dyn BackendFactory)` that panics on a
//! failed assertion. Call them from a backend's or the worker's test crate
//! on a multi-thread runtime (except
//! [`blocking_handlers_do_not_block_the_runtime`], which means most on a
//! current-thread one, and [`worker_events_name_their_attempt`], which
//! records the events of its own thread only):
//!
//! ```no_run
//! # async fn demo(factory: &dyn cairnq_testkit::BackendFactory) {
//! cairnq_testkit::worker_suite::cancel_wins_on_every_path(factory).await;
//! # }
//! ```
//!
//! The crash, chaos, fairness and graceful-stop tests start child processes
//! ([`crate::child`]); they need a store another process can open (a
//! [`StoreLocator`](crate::StoreLocator)) and skip with a message otherwise.

mod bulk;
mod chaos;
mod clients;
mod dependencies;
mod events;
mod fairness;
mod fan_out;
mod fan_out_kills;
mod flow_control;
mod flow_fleet;
mod handler_api;
mod lifecycle;
mod limits;
mod outcomes;
mod queue_ops;
mod reads;
mod schedule_policies;
mod schedule_workers;
mod schedules;
mod settling;
mod steps;
mod support;
mod telemetry;
mod traces;
mod waits;
mod wakeups;

pub use bulk::bulk_actions_take_what_their_filter_matches;
pub use chaos::{random_sigkills_lose_no_task, random_sigkills_never_break_a_limit};
pub use clients::{
    a_closed_store_refuses_every_call, a_killed_submitter_loses_no_acknowledged_submit,
    concurrent_claimers_never_take_the_same_row, keyed_submits_from_concurrent_producers_keep_one_live_task_per_key,
    submit_many_is_all_or_nothing,
};
pub use dependencies::{
    a_diamond_runs_in_dependency_order_and_joins_results, a_failed_dependency_cancels_or_runs_its_dependent,
    an_unknown_dependency_refuses_the_submit, waiting_tasks_follow_the_cancel_retry_and_purge_rules,
};
pub use events::worker_events_name_their_attempt;
pub use fairness::worker_processes_share_a_drain;
pub use fan_out::{a_fan_out_of_a_lost_lease_writes_nothing, a_fan_out_of_a_thousand_children_joins_once};
pub use fan_out_kills::sigkills_leave_no_half_written_fan_out;
pub use flow_control::{
    a_claim_admits_what_each_limit_allows, a_draw_over_several_queues_admits_by_the_same_limits,
    keys_take_turns_within_a_priority, limit_statuses_count_what_runs_and_waits, limits_are_set_read_and_removed,
};
pub use flow_fleet::{
    a_backlogged_key_starves_no_other_key, a_fleet_never_runs_more_of_a_key_than_its_limit,
    a_rate_limit_paces_the_starts_of_a_fleet, a_rate_that_opens_before_the_wait_hint_starts_work_without_a_poll,
};
pub use handler_api::{
    a_batch_item_that_does_not_decode_fails_alone, a_context_that_lost_its_lease_submits_no_children,
    a_progress_report_carries_a_cancel_home, a_value_handler_takes_a_payload_nested_a_thousand_levels,
    canceled_reads_the_store_when_the_heartbeat_is_stale, handler_failures_follow_the_sdk_defaults,
};
pub use lifecycle::{
    a_killed_worker_is_recovered_after_its_lease, a_second_sigint_stops_at_once, a_second_sigterm_stops_at_once,
    a_stopped_worker_claims_nothing_more, a_suspended_worker_reports_its_lost_leases, cancel_wins_on_every_path,
    sigterm_drains_then_abandons,
};
pub use limits::{
    a_batch_call_settles_what_it_left_open, a_failed_batch_call_fails_what_it_left_open,
    a_resource_is_never_overcommitted, per_name_concurrency_caps_calls, rotation_shares_slots_between_names,
    the_byte_budget_bounds_payloads_in_flight,
};
pub use outcomes::{
    a_blocked_runtime_is_reported, a_context_reports_progress_and_submits_children,
    a_panic_fails_the_attempt_and_the_worker_keeps_serving, an_unknown_name_fails_as_no_handler,
    an_unserializable_result_fails_permanently, blocking_handlers_do_not_block_the_runtime,
    exhausted_attempts_fail_with_the_envelope, max_run_abandons_a_hung_handler, only_registered_names_are_claimed,
    retries_follow_the_backoff_windows,
};
pub use queue_ops::{
    a_submit_returns_the_row_it_wrote, a_typed_call_writes_its_submit_options,
    backpressure_refuses_submits_to_a_full_queue, retention_sweeps_by_rule,
    times_past_the_protocols_range_are_refused_before_any_write,
};
pub use reads::{
    a_created_range_lists_and_counts_only_its_rows, a_task_knows_its_children_and_its_key,
    counts_agree_with_the_rows_and_stop_at_their_bound, lists_read_the_same_rows_whatever_their_plan,
    oldest_due_reads_each_queue_across_priorities,
};
pub use schedule_policies::{
    a_fire_holding_a_stale_slot_changes_nothing,
    a_redeclared_schedule_keeps_its_next_fire_unless_its_spec_or_zone_changed, catch_up_after_an_outage,
    catch_up_after_an_outage_on_the_store_clock, jitter_delays_each_fired_task_within_its_bound,
    overlap_skip_holds_while_the_previous_fire_is_queued, overlap_skip_holds_while_the_previous_fire_runs,
};
pub use schedule_workers::{
    a_worker_fires_due_schedules_unless_opted_out, a_worker_reports_schedules_it_no_longer_declares,
    schedule_fires_are_counted_and_traced_as_submits,
};
pub use schedules::{
    a_shared_schedule_fires_each_slot_once_across_processes, schedules_are_managed_through_the_client,
};
pub use settling::{
    a_failed_settle_is_reported_with_its_phase_and_task, a_refused_result_fails_only_its_own_task,
    complete_batch_settles_each_task_as_complete_would,
};
pub use steps::{
    a_permanent_step_failure_is_kept_and_a_retryable_one_is_not, a_purge_deletes_the_steps_of_its_tasks,
    a_step_of_a_lost_lease_is_refused, a_step_runs_once_across_attempts, repeated_step_names_are_numbered,
};
pub use telemetry::{
    limit_metrics_count_running_and_throttled, metrics_count_a_canceled_attempt, metrics_count_a_lost_lease,
    metrics_count_each_task_once, metrics_count_retried_and_failed_attempts, queue_gauges_read_depth_and_age,
};
pub use traces::a_process_span_continues_the_send_span_across_processes;
pub use waits::{
    a_timed_out_wait_names_the_worker_or_the_next_attempt, a_timed_out_wait_says_what_the_task_is_doing,
    a_timed_out_wait_says_when_the_task_waits_on_its_limit, a_wait_by_id_waits_for_a_task_not_visible_yet,
    a_wait_by_key_waits_for_the_key_and_follows_a_replace,
};
pub use wakeups::{
    push_wakeups_complete_watches_taken_before_a_change, waits_are_woken_by_the_finish_not_the_poll,
    watch_signals_claimable_finished_and_ticks,
};
