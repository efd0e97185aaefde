//! Integration tests of the `cairnq` binary: each drives the built binary
//! as a subprocess against real SQLite files and the test Postgres server
//! (a fresh schema each), and checks what it prints against what the
//! library returns for the same database.

mod after;
mod bad_input;
mod book;
mod damage;
mod destructive;
mod details;
mod errtext;
mod exec_chaos;
mod flags;
mod fleet;
mod flow;
mod limit;
mod list_view;
mod lost_lease;
mod marked;
mod metrics;
mod migrate_sql;
mod ops;
mod outage;
mod output;
mod pooler;
mod pooler_budget;
mod pooler_fleet;
mod pooler_python;
mod pooler_restart;
mod python;
mod scenarios;
mod schedule;
mod serve;
mod steps;
mod support;
mod top;
mod waiting;
mod web;
mod worker;
mod worker_death;
