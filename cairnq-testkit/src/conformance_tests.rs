//! `conformance_tests!`: the whole shared suite — every built-in scenario and
//! every worker-suite test — as `#[tokio::test]`s in the calling test crate,
//! from one list, so each backend's `tests/conformance.rs` is one line and no
//! backend can silently skip a test another runs.
//!
//! ```ignore
//! // your-backend/tests/conformance.rs
//! fn factory() -> MyFactory { MyFactory::new() }
//! cairnq_testkit::conformance_tests!(factory());
//! ```
//!
//! The caller needs `tokio` (with `macros` and `rt-multi-thread`) among its
//! dev-dependencies.

/// Every built-in scenario and every worker-suite test on `$factory` (an
/// expression evaluated once per test, yielding a [`BackendFactory`](crate::BackendFactory)).
#[macro_export]
macro_rules! conformance_tests {
    ($factory:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn every_builtin_scenario_passes() {
            let factory = $factory;
            let report = $crate::scenario::run_all(&factory).await;
            assert_eq!(report.outcomes.len(), $crate::scenario::builtin_scenarios().len());
            report.assert_all_passed();
        }

        $crate::worker_suite_tests!($factory);
    };
}

/// Every worker-suite test on `$factory`, each on the runtime flavor it needs.
#[macro_export]
macro_rules! worker_suite_tests {
    ($factory:expr) => {
        $crate::__worker_suite_each!($factory;
            "multi_thread": a_killed_worker_is_recovered_after_its_lease,
            "multi_thread": a_suspended_worker_reports_its_lost_leases,
            "multi_thread": random_sigkills_lose_no_task,
            "multi_thread": worker_processes_share_a_drain,
            "multi_thread": sigterm_drains_then_abandons,
            "multi_thread": a_second_sigterm_stops_at_once,
            "multi_thread": a_second_sigint_stops_at_once,
            "multi_thread": a_stopped_worker_claims_nothing_more,
            "multi_thread": cancel_wins_on_every_path,
            "multi_thread": retries_follow_the_backoff_windows,
            "multi_thread": exhausted_attempts_fail_with_the_envelope,
            "multi_thread": a_panic_fails_the_attempt_and_the_worker_keeps_serving,
            "multi_thread": an_unknown_name_fails_as_no_handler,
            "multi_thread": only_registered_names_are_claimed,
            "multi_thread": an_unserializable_result_fails_permanently,
            "multi_thread": max_run_abandons_a_hung_handler,
            "current_thread": blocking_handlers_do_not_block_the_runtime,
            "current_thread": a_blocked_runtime_is_reported,
            "multi_thread": a_context_reports_progress_and_submits_children,
            "multi_thread": a_diamond_runs_in_dependency_order_and_joins_results,
            "multi_thread": a_failed_dependency_cancels_or_runs_its_dependent,
            "multi_thread": an_unknown_dependency_refuses_the_submit,
            "multi_thread": waiting_tasks_follow_the_cancel_retry_and_purge_rules,
            "multi_thread": a_fan_out_of_a_thousand_children_joins_once,
            "multi_thread": a_fan_out_of_a_lost_lease_writes_nothing,
            "multi_thread": sigkills_leave_no_half_written_fan_out,
            "multi_thread": a_batch_call_settles_what_it_left_open,
            "multi_thread": a_failed_batch_call_fails_what_it_left_open,
            "multi_thread": a_resource_is_never_overcommitted,
            "multi_thread": per_name_concurrency_caps_calls,
            "multi_thread": rotation_shares_slots_between_names,
            "multi_thread": the_byte_budget_bounds_payloads_in_flight,
            "multi_thread": backpressure_refuses_submits_to_a_full_queue,
            "multi_thread": retention_sweeps_by_rule,
            "multi_thread": complete_batch_settles_each_task_as_complete_would,
            "multi_thread": a_submit_returns_the_row_it_wrote,
            "multi_thread": a_typed_call_writes_its_submit_options,
            "multi_thread": times_past_the_protocols_range_are_refused_before_any_write,
            "multi_thread": push_wakeups_complete_watches_taken_before_a_change,
            "multi_thread": waits_are_woken_by_the_finish_not_the_poll,
            "multi_thread": handler_failures_follow_the_sdk_defaults,
            "multi_thread": a_batch_item_that_does_not_decode_fails_alone,
            "multi_thread": canceled_reads_the_store_when_the_heartbeat_is_stale,
            "multi_thread": a_progress_report_carries_a_cancel_home,
            "multi_thread": a_value_handler_takes_a_payload_nested_a_thousand_levels,
            "multi_thread": a_context_that_lost_its_lease_submits_no_children,
            "multi_thread": watch_signals_claimable_finished_and_ticks,
            "multi_thread": a_refused_result_fails_only_its_own_task,
            "multi_thread": a_failed_settle_is_reported_with_its_phase_and_task,
            "multi_thread": a_wait_by_key_waits_for_the_key_and_follows_a_replace,
            "multi_thread": a_wait_by_id_waits_for_a_task_not_visible_yet,
            "multi_thread": a_timed_out_wait_says_what_the_task_is_doing,
            "multi_thread": a_timed_out_wait_names_the_worker_or_the_next_attempt,
            "multi_thread": a_timed_out_wait_says_when_the_task_waits_on_its_limit,
            "multi_thread": a_closed_store_refuses_every_call,
            "multi_thread": submit_many_is_all_or_nothing,
            "multi_thread": keyed_submits_from_concurrent_producers_keep_one_live_task_per_key,
            "multi_thread": concurrent_claimers_never_take_the_same_row,
            "multi_thread": a_killed_submitter_loses_no_acknowledged_submit,
            "multi_thread": a_shared_schedule_fires_each_slot_once_across_processes,
            "multi_thread": schedules_are_managed_through_the_client,
            "multi_thread": limits_are_set_read_and_removed,
            "multi_thread": a_claim_admits_what_each_limit_allows,
            "multi_thread": keys_take_turns_within_a_priority,
            "multi_thread": limit_statuses_count_what_runs_and_waits,
            "multi_thread": a_draw_over_several_queues_admits_by_the_same_limits,
            "multi_thread": a_fleet_never_runs_more_of_a_key_than_its_limit,
            "multi_thread": a_rate_limit_paces_the_starts_of_a_fleet,
            "multi_thread": a_rate_that_opens_before_the_wait_hint_starts_work_without_a_poll,
            "multi_thread": a_backlogged_key_starves_no_other_key,
            "multi_thread": random_sigkills_never_break_a_limit,
            "multi_thread": a_task_knows_its_children_and_its_key,
            "multi_thread": counts_agree_with_the_rows_and_stop_at_their_bound,
            "multi_thread": a_created_range_lists_and_counts_only_its_rows,
            "multi_thread": bulk_actions_take_what_their_filter_matches,
            "multi_thread": oldest_due_reads_each_queue_across_priorities,
            "multi_thread": lists_read_the_same_rows_whatever_their_plan,
            "multi_thread": overlap_skip_holds_while_the_previous_fire_runs,
            "multi_thread": overlap_skip_holds_while_the_previous_fire_is_queued,
            "multi_thread": catch_up_after_an_outage_on_the_store_clock,
            "multi_thread": a_fire_holding_a_stale_slot_changes_nothing,
            "multi_thread": a_redeclared_schedule_keeps_its_next_fire_unless_its_spec_or_zone_changed,
            "multi_thread": jitter_delays_each_fired_task_within_its_bound,
            "multi_thread": a_worker_fires_due_schedules_unless_opted_out,
            "multi_thread": a_worker_reports_schedules_it_no_longer_declares,
            "multi_thread": schedule_fires_are_counted_and_traced_as_submits,
            "multi_thread": metrics_count_each_task_once,
            "multi_thread": metrics_count_retried_and_failed_attempts,
            "multi_thread": metrics_count_a_lost_lease,
            "multi_thread": metrics_count_a_canceled_attempt,
            "current_thread": worker_events_name_their_attempt,
            "multi_thread": queue_gauges_read_depth_and_age,
            "multi_thread": limit_metrics_count_running_and_throttled,
            "multi_thread": a_process_span_continues_the_send_span_across_processes,
            "multi_thread": a_step_runs_once_across_attempts,
            "multi_thread": a_permanent_step_failure_is_kept_and_a_retryable_one_is_not,
            "multi_thread": repeated_step_names_are_numbered,
            "multi_thread": a_step_of_a_lost_lease_is_refused,
            "multi_thread": a_purge_deletes_the_steps_of_its_tasks,
        );
    };
}

/// One `#[tokio::test]` per listed worker-suite test (implementation detail
/// of [`worker_suite_tests!`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __worker_suite_each {
    ($factory:expr; $($flavor:literal: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = $flavor)]
            async fn $name() {
                $crate::worker_suite::$name(&$factory).await;
            }
        )*
    };
}
