//! The worker suite (`cairnq_testkit::worker_suite`) on real SQLite files,
//! with real worker loops and real worker processes.

use cairnq_testkit::sqlite::SqliteFactory;
use cairnq_testkit::worker_suite as suite;

fn factory() -> SqliteFactory {
    SqliteFactory::new().expect("a temp dir for SQLite stores")
}

macro_rules! on_sqlite {
    ($($flavor:literal: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = $flavor)]
            async fn $name() {
                suite::$name(&factory()).await;
            }
        )*
    };
}

on_sqlite!(
    "multi_thread": a_killed_worker_is_recovered_after_its_lease,
    "multi_thread": sigterm_drains_then_abandons,
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
    "multi_thread": a_batch_call_settles_what_it_left_open,
    "multi_thread": a_failed_batch_call_fails_what_it_left_open,
    "multi_thread": a_resource_is_never_overcommitted,
    "multi_thread": per_name_concurrency_caps_calls,
    "multi_thread": the_byte_budget_bounds_payloads_in_flight,
    "multi_thread": backpressure_refuses_submits_to_a_full_queue,
    "multi_thread": retention_sweeps_by_rule,
);
