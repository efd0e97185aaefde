//! [`PostgresStore`]: the [`Store`] implementation over a connection pool,
//! plus the operations that join an application's own transaction.

use std::sync::Arc;

use async_trait::async_trait;
use cairnq_core::backend::Coalescer;
use cairnq_core::store::{
    CancelParams, ChildrenParams, ClaimParams, CompleteBatchParams, CountQueuedParams, CountTasksParams, FailParams,
    GetParams, HeartbeatBatchParams, HeartbeatParams, LimitRow, LimitUsage, LimitUsageParams, LimitWaitParams,
    LimitsQuery, ListFilter, NewTask, Notifications, ProbeParams, ProgressParams, PurgeFilter, PushSource,
    RemoveLimitParams, RepairParams, Repaired, RetryParams, ScheduleStore, SetLimitParams, SettleParams, StatsParams,
    StepStore, SubmitManyParams, TaskKeyParams, TaskRow,
};
use cairnq_core::{Capabilities, HeldLease, Install, QueueAge, Result, Store, Task, TaskCount, TaskRef};
use cairnq_sql::steps::STEPS_TABLE;
use cairnq_sql::{LimitMode, Query, Sql, flows, limits};
use deadpool_postgres::Pool;

use crate::conn::{Conn, Connections, Statements};
use crate::exec::{AppSession, Session, answer};
use crate::flows::PgExec;
use crate::listener::Listener;
use crate::migrate::{PoolOrigin, install, require_installation, table_exists};
use crate::options::PostgresOptions;
use crate::write::{check_json, check_jsonb};
use crate::{pool, read, tls, write};

/// A cairnq store on Postgres: a pool of connections (statements prepared
/// once per connection), the database clock for every time, and one LISTEN
/// connection for push wakeups. Cheap to clone; clones share the pool.
///
/// ```no_run
/// # async fn demo() -> cairnq_core::Result<()> {
/// use cairnq_core::CairnQ;
/// use cairnq_postgres::{PostgresOptions, PostgresStore};
/// let options = PostgresOptions::new().schema("jobs");
/// let store = PostgresStore::connect_with("postgres://app@127.0.0.1/app", options).await?;
/// let client = CairnQ::new(store.clone());
/// client.submit("send_email", &serde_json::json!({"to": "a@example.com"})).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The pool, the DSN's `host:port` for errors and reports (an
    /// application's pool: `None`), and how statements run.
    conns: Connections,
    /// Whether the pool is ours to close ([`PostgresStore::connect`]) or the
    /// application's ([`PostgresStore::from_pool`]).
    owns_pool: bool,
    /// Closes our pool's idle connections (`idle_timeout`).
    idle_sweeper: Option<pool::IdleSweeper>,
    listener: Option<Arc<Listener>>,
    /// Pooler mode with no LISTEN connection: why the store only polls.
    polls_only: Option<String>,
    schema: Option<String>,
    pooler: bool,
    /// Unkeyed submits share writes (see [`write::submit_queue`]).
    submits: Arc<Coalescer<NewTask, Task>>,
    /// Whether the database has the trigger-kept counter table
    /// (`ext_0002_task_counts`): stats and queue depth read it instead of
    /// counting rows. An installation another SDK made, opened with
    /// `Install::Existing`, may lack it.
    counted: bool,
    /// Whether the database has the list-order index (`ext_0003`) a
    /// filtered list may walk (see `Query::list_planned`).
    ordered: bool,
    /// Whether claims enforce limits: the database has the flow-control
    /// extensions (`ext_0006`, `ext_0007`).
    limits: LimitMode,
    /// Whether the database has the steps table (`ext_0009_steps`).
    stepped: bool,
}

impl PostgresStore {
    /// Connects with the default [`PostgresOptions`]: migrates the database
    /// (once, whoever else connects at the same time), checks its protocol
    /// version, and starts the LISTEN connection.
    ///
    /// Errors: a DSN that does not parse is a `Validation` error; an
    /// unreachable server, bad credentials or missing privileges are
    /// `Storage` errors (transient when a retry may help) raised within the
    /// connect timeout; `ProtocolVersionMismatch` and `SchemaMismatch` as
    /// their names say.
    pub async fn connect(dsn: &str) -> Result<Self> {
        Self::connect_with(dsn, PostgresOptions::default()).await
    }

    /// Connects with explicit options (schema, pool size, connect timeout,
    /// wakeups).
    pub async fn connect_with(dsn: &str, options: PostgresOptions) -> Result<Self> {
        options.validate()?;
        let config = pool::pg_config(dsn, &options)?;
        let pool = pool::build(config.clone(), tls::connector(&options)?, &options)?;
        let endpoint = pool::endpoint(&config).map(Arc::from);
        let listen_config = match &options.listen_dsn {
            Some(listen_dsn) => Some(pool::pg_config(listen_dsn, &options)?),
            // LISTEN through a transaction pooler hears nothing.
            None if options.pooler => None,
            None => Some(config),
        };
        Self::start((pool, endpoint), PoolOrigin::Ours, listen_config, options).await
    }

    /// A store on the application's own deadpool pool (the
    /// [`deadpool_postgres`] this crate re-exports), so the application
    /// keeps one pool: the store checks connections out of it as it needs
    /// them and gives them back, and its [`close`](Store::close) leaves
    /// the pool open. Migrates and checks the database as
    /// [`connect`](Self::connect) does.
    ///
    /// The pool's connections are used as they are: cairnq's tables live
    /// where their search_path resolves. For a schema of its own, put it
    /// first on that search_path (`options=-csearch_path%3Djobs` in the
    /// DSN, or a `post_create` hook) and name it in
    /// [`PostgresOptions::schema`]: it is created when absent, and a pool
    /// whose connections resolve names elsewhere is refused with a
    /// `Validation` error before anything is written. Without `schema`,
    /// the same guard as `connect` refuses a search_path that would start
    /// a second installation beside an existing one. `pool_size` does not
    /// apply (the pool has its own size; cairnq holds one connection per
    /// operation in flight and returns it at once).
    ///
    /// Push wakeups: a pooled connection cannot LISTEN (the pool's
    /// connection task drops notifications), so the store opens one
    /// dedicated LISTEN connection to [`PostgresOptions::listen_dsn`] when
    /// given; without it the store polls (waits and idle workers then see
    /// new work within their poll interval instead of at once).
    ///
    /// ```no_run
    /// # async fn demo() -> cairnq_core::Result<()> {
    /// use cairnq_core::CairnQ;
    /// use cairnq_postgres::deadpool_postgres::{Config, Runtime};
    /// use cairnq_postgres::{PostgresOptions, PostgresStore};
    ///
    /// let dsn = "postgres://app@127.0.0.1/app";
    /// let mut config = Config::new();
    /// config.url = Some(dsn.into());
    /// let app_pool = config.create_pool(Some(Runtime::Tokio1), tokio_postgres::NoTls).expect("pool");
    /// let store = PostgresStore::from_pool(app_pool.clone(), PostgresOptions::new().listen_dsn(dsn)).await?;
    /// CairnQ::new(store).submit("send_email", &serde_json::json!({"to": "a@example.com"})).await?;
    /// # Ok(()) }
    /// ```
    pub async fn from_pool(pool: Pool, options: PostgresOptions) -> Result<Self> {
        options.validate()?;
        let listen_config = options.listen_dsn.as_deref().map(|dsn| pool::pg_config(dsn, &options)).transpose()?;
        Self::start((pool, None), PoolOrigin::Application, listen_config, options).await
    }

    /// Installs on a checkout of `pool`, then starts the LISTEN connection
    /// (when `listen` is on and there is somewhere to connect it).
    async fn start(
        (pool, endpoint): (Pool, Option<Arc<str>>),
        origin: PoolOrigin,
        listen_config: Option<tokio_postgres::Config>,
        options: PostgresOptions,
    ) -> Result<Self> {
        let conns = Connections::new(pool, endpoint, Statements::of(&options));
        let origin = match origin {
            PoolOrigin::Application if options.pooler => PoolOrigin::ApplicationPooled,
            origin => origin,
        };
        let mut client = conns.get().await?;
        match options.install {
            Install::Existing => require_installation(&client, options.schema.as_deref()).await?,
            _ => install(&mut client, options.schema.as_deref(), origin).await?,
        }
        let counted = table_exists(&client, Query::COUNTS_TABLE).await?;
        let limited = answer(&client, &Query::new(Sql::IndexExists).arg("index", Query::LIMITS_INDEX)).await?;
        let limits = if limited { LimitMode::On } else { LimitMode::Off };
        let ordered = answer(&client, &Query::new(Sql::IndexExists).arg("index", Query::ORDER_INDEX)).await?;
        let stepped = table_exists(&client, STEPS_TABLE).await?;
        drop(client);
        let listener = match listen_config.filter(|_| options.listen) {
            Some(config) => Some(Arc::new(Listener::start(config, tls::connector(&options)?))),
            None => None,
        };
        let polls_only = (options.pooler && options.listen && listener.is_none()).then(crate::pooler::polls_only);
        let owns_pool = origin == PoolOrigin::Ours;
        let idle_sweeper = owns_pool.then(|| pool::release_idle(conns.pool.clone(), options.idle_timeout));
        let (schema, submits) = (options.schema, write::submit_queue(conns.clone()));
        let inner = Inner {
            conns,
            owns_pool,
            idle_sweeper,
            listener,
            polls_only,
            schema,
            pooler: options.pooler,
            submits,
            counted,
            ordered,
            limits,
            stepped,
        };
        Ok(Self { inner: Arc::new(inner) })
    }

    /// The schema given at connect, if any.
    pub fn schema(&self) -> Option<&str> {
        self.inner.schema.as_deref()
    }

    /// Whether the store runs in pooler mode ([`PostgresOptions::pooler`]).
    pub fn pooler(&self) -> bool {
        self.inner.pooler
    }

    /// Whether the LISTEN connection is up right now (push wakeups flow).
    pub fn listening(&self) -> bool {
        self.inner.listener.as_ref().is_some_and(|l| l.is_live())
    }

    /// [`Store::complete`] inside the application's own client or
    /// transaction (any [`Session`]: tokio-postgres' or deadpool's): the
    /// task settles if and only if that transaction
    /// commits, together with the handler's own writes. The session must
    /// reach the cairnq tables through its search_path (connect it with the
    /// same schema).
    ///
    /// ```no_run
    /// # async fn demo(store: cairnq_postgres::PostgresStore, mut app: tokio_postgres::Client,
    /// #               task: cairnq_core::Task, worker_id: &str) -> cairnq_core::Result<()> {
    /// use cairnq_core::store::SettleParams;
    /// let tx = app.transaction().await.expect("begin");
    /// tx.execute("insert into invoices (task_id) values ($1)", &[&task.id]).await.expect("insert");
    /// store.complete_in(&tx, &SettleParams::new(&task.id, worker_id).result(serde_json::json!({"ok": true}))).await?;
    /// tx.commit().await.expect("commit");
    /// # Ok(()) }
    /// ```
    pub async fn complete_in<S>(&self, session: &S, params: &SettleParams) -> Result<Task>
    where
        S: Session + ?Sized,
    {
        crate::settle_in::complete_in_session(session, params).await
    }

    /// [`Store::succeed`] inside the application's own client or
    /// transaction (see [`complete_in`](Self::complete_in)).
    pub async fn succeed_in<S>(&self, session: &S, params: &SettleParams) -> Result<Task>
    where
        S: Session + ?Sized,
    {
        check_jsonb("result", &params.result)?;
        flows::succeed(&PgExec(&AppSession(session)), params).await
    }

    pub(crate) async fn client(&self) -> Result<Conn> {
        self.inner.conns.get().await
    }
}

/// A flow of `cairnq_sql::flows` in a transaction of its own (keyed submits,
/// `submit_many`, claims and repairs are all or nothing).
macro_rules! in_transaction {
    ($store:expr, $flow:ident, $params:expr) => {
        in_transaction!($store, flows::$flow, $params)
    };
    ($store:expr, $module:ident :: $flow:ident, $params:expr) => {{
        let mut client = $store.client().await?;
        let tx = client.begin().await?;
        let done = $module::$flow(&PgExec(&tx), $params).await?;
        tx.commit().await?;
        Ok(done)
    }};
}
pub(crate) use in_transaction;

/// A flow of `cairnq_sql::flows` (one statement) on a pooled connection.
macro_rules! on_connection {
    ($store:expr, $flow:ident, $params:expr) => {
        on_connection!($store, flows::$flow, $params)
    };
    ($store:expr, $module:ident :: $flow:ident, $params:expr) => {
        $module::$flow(&PgExec(&$store.client().await?), $params).await
    };
}
pub(crate) use on_connection;

#[async_trait]
impl Store for PostgresStore {
    fn backend(&self) -> &'static str {
        "postgres"
    }

    fn endpoint(&self) -> Option<String> {
        self.inner.conns.endpoint.as_deref().map(str::to_string)
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::none().with_push_wakeups(self.inner.listener.as_ref().is_some_and(|l| !l.is_refused()))
    }

    async fn submit(&self, task: &NewTask) -> Result<Task> {
        check_json(task)?;
        if task.key.is_none() {
            return self.inner.submits.call(task.clone()).await;
        }
        in_transaction!(self, submit, task)
    }

    async fn submit_many(&self, params: &SubmitManyParams) -> Result<Vec<Task>> {
        // Every item is checked before the first insert is sent.
        params.tasks.iter().try_for_each(check_json)?;
        in_transaction!(self, submit_many, params)
    }

    async fn get(&self, params: &GetParams) -> Result<Option<Task>> {
        read::get(&self.client().await?, params).await
    }

    async fn get_status(&self, params: &GetParams) -> Result<Option<TaskRef>> {
        read::get_status(&self.client().await?, params).await
    }

    async fn list(&self, params: &ListFilter) -> Result<Vec<TaskRow>> {
        read::list(&self.client().await?, params, self.inner.counted, self.inner.ordered).await
    }

    async fn count_tasks(&self, params: &CountTasksParams) -> Result<u64> {
        read::count_tasks(&self.client().await?, params).await
    }

    async fn children(&self, params: &ChildrenParams) -> Result<Vec<TaskRow>> {
        read::children(&self.client().await?, params).await
    }

    async fn task_key(&self, params: &TaskKeyParams) -> Result<Option<String>> {
        read::task_key(&self.client().await?, params).await
    }

    async fn stats(&self, params: &StatsParams) -> Result<Vec<TaskCount>> {
        read::stats(&self.client().await?, params, self.inner.counted).await
    }

    async fn count_queued(&self, params: &CountQueuedParams) -> Result<u64> {
        read::count_queued(&self.client().await?, params, self.inner.counted).await
    }

    async fn oldest_due(&self, params: &StatsParams) -> Result<Vec<QueueAge>> {
        read::oldest_due(&self.client().await?, params).await
    }

    async fn cancel(&self, params: &CancelParams) -> Result<Option<Task>> {
        on_connection!(self, cancel, params)
    }

    async fn retry(&self, params: &RetryParams) -> Result<Option<Task>> {
        on_connection!(self, retry, params)
    }

    async fn purge(&self, params: &PurgeFilter) -> Result<Vec<String>> {
        on_connection!(self, purge, params)
    }

    async fn purgeable(&self, params: &PurgeFilter) -> Result<Vec<TaskRow>> {
        read::purgeable(&self.client().await?, params).await
    }

    async fn claimable(&self, params: &ProbeParams) -> Result<bool> {
        read::claimable(&self.client().await?, params).await
    }

    async fn claim(&self, params: &ClaimParams) -> Result<Vec<Task>> {
        let mut client = self.client().await?;
        let tx = client.begin().await?;
        let claimed = flows::claim_with(&PgExec(&tx), params, self.inner.limits).await?;
        tx.commit().await?;
        Ok(claimed)
    }

    async fn heartbeat(&self, params: &HeartbeatParams) -> Result<Task> {
        on_connection!(self, heartbeat, params)
    }

    async fn heartbeat_batch(&self, params: &HeartbeatBatchParams) -> Result<Vec<HeldLease>> {
        on_connection!(self, heartbeat_batch, params)
    }

    async fn progress(&self, params: &ProgressParams) -> Result<Task> {
        on_connection!(self, progress, params)
    }

    async fn succeed(&self, params: &SettleParams) -> Result<Task> {
        check_jsonb("result", &params.result)?;
        on_connection!(self, succeed, params)
    }

    async fn complete(&self, params: &SettleParams) -> Result<Task> {
        check_jsonb("result", &params.result)?;
        on_connection!(self, complete, params)
    }

    async fn complete_batch(&self, params: &CompleteBatchParams) -> Result<Vec<TaskRef>> {
        write::complete_batch(&self.client().await?, params).await
    }

    async fn fail(&self, params: &FailParams) -> Result<Task> {
        check_jsonb("error", &params.error)?;
        on_connection!(self, fail, params)
    }

    async fn repair(&self, params: &RepairParams) -> Result<Repaired> {
        in_transaction!(self, repair, params)
    }

    fn notifications(&self) -> Notifications {
        match (&self.inner.listener, &self.inner.polls_only) {
            (Some(listener), _) => Notifications::push(Arc::clone(listener) as Arc<dyn PushSource>),
            (None, Some(why)) => Notifications::polls_only(cairnq_core::Error::Storage {
                message: why.clone(),
                source: None,
                transient: false,
            }),
            (None, None) => Notifications::none(),
        }
    }

    fn schedule_store(&self) -> Option<&dyn ScheduleStore> {
        Some(self)
    }

    fn step_store(&self) -> Option<&dyn StepStore> {
        if self.inner.stepped { Some(self) } else { None }
    }

    fn dependency_store(&self) -> Option<&dyn cairnq_core::store::DependencyStore> {
        Some(self)
    }

    async fn limits(&self, query: &LimitsQuery) -> Result<Vec<LimitRow>> {
        on_connection!(self, limits::limits, query)
    }

    async fn set_limit(&self, params: &SetLimitParams) -> Result<LimitRow> {
        on_connection!(self, limits::set_limit, params)
    }

    async fn remove_limit(&self, params: &RemoveLimitParams) -> Result<bool> {
        on_connection!(self, limits::remove_limit, params)
    }

    async fn limit_usage(&self, params: &LimitUsageParams) -> Result<LimitUsage> {
        on_connection!(self, limits::limit_usage, params)
    }

    async fn limit_wait(&self, params: &LimitWaitParams) -> Result<Option<i64>> {
        if self.inner.limits == LimitMode::Off {
            return Ok(None);
        }
        on_connection!(self, limits::limit_wait, params)
    }

    async fn close(&self) -> Result<()> {
        if let Some(listener) = &self.inner.listener {
            listener.stop();
        }
        if let Some(sweeper) = &self.inner.idle_sweeper {
            sweeper.stop();
        }
        if self.inner.owns_pool {
            self.inner.conns.pool.close();
        }
        Ok(())
    }
}
