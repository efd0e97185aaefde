//! Integration tests of the Postgres backend against a real server: the
//! shared test server of `cairnq_testkit::postgres` (`CAIRNQ_TEST_PG_DSN`,
//! or a throwaway cluster started on first use), one fresh schema per test.
//! One binary, one module per area.

mod app_pool;
mod connect;
mod dependencies;
mod existing;
mod ops;
mod plans;
mod pooler;
mod pooler_wakeup;
mod repair;
mod restart;
mod session;
mod support;
#[cfg(feature = "tls")]
mod tls;
mod wakeups;
mod workers;
