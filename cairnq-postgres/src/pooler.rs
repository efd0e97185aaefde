//! Statements that survive a transaction-mode connection pooler
//! ([`PostgresOptions::pooler`](crate::PostgresOptions::pooler)).
//!
//! A transaction pooler (PgBouncer with `pool_mode = transaction`, or a
//! managed pooler that works the same way) lends a server connection to a
//! client for one transaction, then to another client. Whatever a session
//! keeps is then either gone or someone else's: a named prepared statement
//! the driver made on one server connection is missing on the next
//! (`prepared statement "s9" does not exist`) or collides with another
//! client's of the same name (`"s0" already exists`), and a session
//! `search_path` is lost between transactions (`relation "cairnq_tasks"
//! does not exist`). So in pooler mode:
//!
//! - every statement runs as the unnamed statement (`query_typed`: parse,
//!   bind and execute in one round trip that ends with the statement).
//!   That needs the parameters' types, which only the server knows (`:limit`
//!   may be a bigint or an integer): they are learned once per statement
//!   text and process with an SQL `PREPARE` under a random name, read back
//!   and deallocated in the same message, so no named statement outlives
//!   it (nor collides with the `s0`, `s1`, ... other clients' drivers leave
//!   on the pooler's server connections);
//! - the schema is `SET LOCAL` inside each transaction: a statement outside
//!   one gets a transaction of its own, `begin; set local search_path`,
//!   the statement and `commit` sent together (one round trip);
//! - learning types must not reorder a transaction's statements: a flow
//!   sends several together, and each waits its turn ([`InOrder`]) from
//!   learning its types to being sent;
//! - advisory locks are transaction-scoped (they already are everywhere:
//!   `pg_advisory_xact_lock`), and LISTEN needs a direct connection
//!   ([`PostgresOptions::listen_dsn`](crate::PostgresOptions::listen_dsn)).
//!
//! What it costs against the default mode is measured by `cargo xtask
//! bench` (BENCHMARKS.md): mostly the per-statement parse the default
//! mode's per-connection statement cache saves.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::Arc;
use std::task::Poll;

use parking_lot::Mutex;
use tokio_postgres::types::{ToSql, Type};
use tokio_postgres::{GenericClient, Row};

use crate::options::quote_ident;

/// Pooler mode's statement runner, shared by a store's connections: the
/// schema to set per transaction and the parameter types learned so far.
#[derive(Debug)]
pub(crate) struct Unnamed {
    /// `set local search_path to "schema"`, when the store has a schema.
    set_path: Option<String>,
    /// Parameter types by statement text.
    types: Mutex<HashMap<String, Arc<[Type]>>>,
}

impl Unnamed {
    pub(crate) fn new(schema: Option<&str>) -> Self {
        let set_path = schema.map(|s| format!("set local search_path to {}", quote_ident(s)));
        Self { set_path, types: Mutex::new(HashMap::new()) }
    }

    fn known(&self, sql: &str) -> Option<Arc<[Type]>> {
        if !sql.contains('$') {
            // A statement without parameters has no types to learn.
            return Some(Arc::from(Vec::new()));
        }
        self.types.lock().get(sql).cloned()
    }

    /// Learns `sql`'s parameter types with SQL `PREPARE` under a name no
    /// other client uses, read back from `pg_prepared_statements` and
    /// deallocated in the same message, on `client` (inside a transaction
    /// whose search_path is set, when there is a schema). Never a driver
    /// `prepare`: its names (`s0`, `s1`, ...) are what other clients leave
    /// behind on a pooler's server connections. A statement without
    /// parameters needs none (see `known`).
    async fn learn<C: GenericClient + Sync>(
        &self,
        client: &C,
        sql: &str,
        wrap: Option<(&str, &str)>,
    ) -> Result<Arc<[Type]>, tokio_postgres::Error> {
        let name = format!("cairnq_types_{}", cairnq_core::backend::new_task_id().to_lowercase());
        let (before, after) = wrap.unwrap_or_default();
        let batch = format!(
            "{before}prepare {name} as {sql};\n\
             select parameter_types::oid[]::text from pg_prepared_statements where name = '{name}';\n\
             deallocate {name};{after}"
        );
        let answer = client.simple_query(&batch).await?;
        let oids = answer.iter().find_map(|message| match message {
            tokio_postgres::SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        });
        let types: Arc<[Type]> = parse_oids(oids.as_deref().unwrap_or("{}")).into();
        self.types.lock().insert(sql.to_string(), Arc::clone(&types));
        Ok(types)
    }

    /// Runs `sql` on a connection outside any transaction: in a transaction
    /// of its own when there is a schema to set.
    pub(crate) async fn run_alone(
        &self,
        client: &tokio_postgres::Client,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let begin = match &self.set_path {
            Some(set) => format!("begin; {set}"),
            None => "begin".to_string(),
        };
        let types = match (self.known(sql), &self.set_path) {
            (Some(types), _) => types,
            (None, None) => self.learn(client, sql, None).await?,
            (None, Some(_)) => {
                let begin = format!("{begin};\n");
                match self.learn(client, sql, Some((&begin, "\nrollback"))).await {
                    Ok(types) => types,
                    Err(error) => {
                        // The message stopped at the error, inside the transaction.
                        let _ = client.batch_execute("rollback").await;
                        return Err(error);
                    }
                }
            }
        };
        let typed = with_types(params, &types);
        if self.set_path.is_none() {
            return client.query_typed(sql, &typed).await;
        }
        // Sent together, answered in order: one round trip. A failed
        // statement aborts the transaction, and the commit then rolls it back.
        let (began, rows, ended) = futures::join!(
            client.batch_execute(&begin),
            client.query_typed(sql, &typed),
            client.batch_execute("commit")
        );
        began?;
        let rows = rows?;
        ended?;
        Ok(rows)
    }

    /// Runs `sql` inside a transaction, in its turn (see [`InOrder`]).
    pub(crate) async fn run_in<C: GenericClient + Sync>(
        &self,
        tx: &C,
        order: &InOrder,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let mut path_set = order.turn.lock().await;
        let types = match self.known(sql) {
            Some(types) => types,
            None => {
                self.set_path_once(tx, &mut path_set).await?;
                self.learn(tx, sql, None).await?
            }
        };
        let typed = with_types(params, &types);
        let set = self.set_path.as_deref().filter(|_| !*path_set);
        let sent = async {
            let set_first = async {
                match set {
                    Some(set) => tx.batch_execute(set).await,
                    None => Ok(()),
                }
            };
            let (set, rows) = futures::join!(set_first, tx.query_typed(sql, &typed));
            set?;
            rows
        };
        let mut sent = pin!(sent);
        // The first poll puts the statement (after the `set local`, when
        // it is pending) on the wire: tokio-postgres sends a request before
        // it waits for the answer. Only then may the next statement go.
        let first = futures::poll!(sent.as_mut());
        *path_set |= set.is_some();
        drop(path_set);
        match first {
            Poll::Ready(rows) => rows,
            Poll::Pending => sent.await,
        }
    }

    /// Sets the schema for the rest of the transaction `tx` unless it is
    /// set already (or there is none), in its turn (see [`InOrder`]).
    pub(crate) async fn ensure_path<C: GenericClient + Sync>(
        &self,
        tx: &C,
        order: &InOrder,
    ) -> Result<(), tokio_postgres::Error> {
        self.set_path_once(tx, &mut *order.turn.lock().await).await
    }

    /// Sets the schema unless `path_set` says it is set; the caller holds the turn.
    async fn set_path_once<C: GenericClient + Sync>(
        &self,
        tx: &C,
        path_set: &mut bool,
    ) -> Result<(), tokio_postgres::Error> {
        match self.set_path.as_deref() {
            Some(set) if !*path_set => {
                tx.batch_execute(set).await?;
                *path_set = true;
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// One pooler-mode transaction's turn to send: its statements reach the
/// server in the order its flow issued them, as in the default mode.
///
/// A flow pipelines statements of one transaction (a claim sends lease
/// recovery and its first draw together), and their order is their
/// meaning: a draw that overtook the recovery would not see the tasks the
/// recovery requeues. In pooler mode a statement whose parameter types are
/// not known yet needs a round trip to learn them (and the first one of a
/// transaction may set the schema) before it can be sent, so without a
/// turn a later statement whose types are known would go first. The turn
/// is a fair (first come, first served) lock held from the learning to
/// the send, not to the answer: statements whose types are known still go
/// out together in one round trip.
#[derive(Debug, Default)]
pub(crate) struct InOrder {
    /// Whether `set local search_path` was sent in the transaction yet.
    turn: tokio::sync::Mutex<bool>,
}

/// Why a pooler-mode store without a listen DSN polls, said once by a
/// worker at its start (through `Notifications::lost`).
pub(crate) fn polls_only() -> String {
    "pooler mode without a listen URL: LISTEN cannot reach Postgres through a transaction pooler, \
     so this store polls (give a direct DSN for LISTEN: --listen-url, PostgresOptions::listen_dsn)"
        .to_string()
}

/// `{20,23}` (oids, as Postgres writes an `oid[]`) as types; a type the
/// driver does not know by oid (none of the cairnq statements has one) is
/// sent by oid alone.
fn parse_oids(text: &str) -> Vec<Type> {
    let inner = text.trim().trim_start_matches('{').trim_end_matches('}');
    inner
        .split(',')
        .filter_map(|oid| oid.trim().parse::<u32>().ok())
        .map(|oid| {
            Type::from_oid(oid).unwrap_or_else(|| {
                Type::new(format!("oid {oid}"), oid, tokio_postgres::types::Kind::Simple, "pg_catalog".into())
            })
        })
        .collect()
}

/// The parameters beside the types the server gave them.
fn with_types<'a>(params: &[&'a (dyn ToSql + Sync)], types: &[Type]) -> Vec<(&'a (dyn ToSql + Sync), Type)> {
    params.iter().copied().zip(types.iter().cloned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_oid_arrays_postgres_writes() {
        assert_eq!(parse_oids("{}"), Vec::<Type>::new());
        assert_eq!(parse_oids("{20,23,3802,1009}"), vec![Type::INT8, Type::INT4, Type::JSONB, Type::TEXT_ARRAY]);
    }
}
