//! The worker suite (`cairnq_testkit::worker_suite`) on every backend we
//! ship — real SQLite files and a real Postgres server — with real worker
//! loops and real worker processes.

/// Every suite test, with the runtime flavor it needs, handed to `$on`.
macro_rules! every_suite_test {
    ($on:ident) => {
        $on!(
            "multi_thread": a_killed_worker_is_recovered_after_its_lease,
            "multi_thread": sigterm_drains_then_abandons,
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
            "multi_thread": a_batch_call_settles_what_it_left_open,
            "multi_thread": a_failed_batch_call_fails_what_it_left_open,
            "multi_thread": a_resource_is_never_overcommitted,
            "multi_thread": per_name_concurrency_caps_calls,
            "multi_thread": rotation_shares_slots_between_names,
            "multi_thread": the_byte_budget_bounds_payloads_in_flight,
            "multi_thread": backpressure_refuses_submits_to_a_full_queue,
            "multi_thread": retention_sweeps_by_rule,
        );
    };
}

/// One `#[tokio::test]` per suite test, on this module's `factory()`.
macro_rules! on_factory {
    ($($flavor:literal: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = $flavor)]
            async fn $name() {
                cairnq_testkit::worker_suite::$name(&factory()).await;
            }
        )*
    };
}

mod sqlite {
    //! On a fresh SQLite file per test.

    fn factory() -> cairnq_testkit::sqlite::SqliteFactory {
        cairnq_testkit::sqlite::SqliteFactory::new().expect("a temp dir for SQLite stores")
    }

    every_suite_test!(on_factory);
}

mod postgres {
    //! On a fresh schema per test of the Postgres test server
    //! (`CAIRNQ_TEST_PG_DSN`, else the throwaway cluster the testkit starts).

    fn factory() -> cairnq_testkit::postgres::PostgresFactory {
        cairnq_testkit::postgres::PostgresFactory::from_test_server().expect("a Postgres test server")
    }

    every_suite_test!(on_factory);
}
