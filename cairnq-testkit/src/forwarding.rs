//! A store that forwards every operation to another store, except the ones
//! its owner overrides: how tests wrap a real backend to count calls,
//! inject a fault, or plant a deliberate bug the suite must catch, without
//! writing out the whole [`Store`] trait each time.
//!
//! ```no_run
//! use std::sync::Arc;
//! use cairnq_core::store::{ClaimParams, Store};
//! use cairnq_core::{Result, Task};
//! use cairnq_testkit::forwarding::{Forward, Forwarding};
//!
//! struct NoClaims(Arc<dyn Store>);
//!
//! #[async_trait::async_trait]
//! impl Forward for NoClaims {
//!     fn inner(&self) -> &dyn Store {
//!         self.0.as_ref()
//!     }
//!     async fn claim(&self, _params: &ClaimParams) -> Result<Vec<Task>> {
//!         Ok(Vec::new())
//!     }
//! }
//! # fn demo(store: Arc<dyn Store>) -> Forwarding<NoClaims> {
//! Forwarding(NoClaims(store))
//! # }
//! ```

use async_trait::async_trait;
use cairnq_core::store::{
    CancelParams, ChildrenParams, ClaimParams, CompleteBatchParams, CountQueuedParams, CountTasksParams, FailParams,
    GetParams, HeartbeatBatchParams, HeartbeatParams, LimitWaitParams, ListFilter, NewTask, ProbeParams,
    ProgressParams, PurgeFilter, RepairParams, RetryParams, SettleParams, StatsParams, SubmitManyParams, TaskKeyParams,
    TaskRow,
};
use cairnq_core::{
    Capabilities, HeldLease, Notifications, QueueAge, Repaired, Result, Store, Task, TaskCount, TaskRef,
};

/// Writes [`Forward`] (every operation forwarded to `inner` unless
/// overridden) and the [`Store`] implementation of [`Forwarding`] from one
/// list of operations, so the two cannot drift apart.
macro_rules! forwarded_operations {
    ($($op:ident($params:ty) -> $out:ty;)*) => {
        /// The operations of [`Store`], each forwarded to
        /// [`inner`](Self::inner) unless overridden. Wrap an implementation
        /// in [`Forwarding`] to use it as a store.
        #[async_trait]
        pub trait Forward: Send + Sync + 'static {
            /// The store everything not overridden goes to.
            fn inner(&self) -> &dyn Store;

            /// [`Store::capabilities`], forwarded unless overridden.
            fn capabilities(&self) -> Capabilities {
                self.inner().capabilities()
            }

            /// [`Store::notifications`], forwarded unless overridden.
            fn notifications(&self) -> Notifications {
                self.inner().notifications()
            }

            /// [`Store::close`], forwarded unless overridden.
            async fn close(&self) -> Result<()> {
                self.inner().close().await
            }

            $(
                #[doc = concat!("[`Store::", stringify!($op), "`], forwarded unless overridden.")]
                async fn $op(&self, params: &$params) -> Result<$out> {
                    self.inner().$op(params).await
                }
            )*
        }

        #[async_trait]
        impl<F: Forward> Store for Forwarding<F> {
            fn backend(&self) -> &'static str {
                self.0.inner().backend()
            }

            fn endpoint(&self) -> Option<String> {
                self.0.inner().endpoint()
            }

            fn capabilities(&self) -> Capabilities {
                self.0.capabilities()
            }

            fn notifications(&self) -> Notifications {
                self.0.notifications()
            }

            async fn close(&self) -> Result<()> {
                self.0.close().await
            }

            $(
                async fn $op(&self, params: &$params) -> Result<$out> {
                    self.0.$op(params).await
                }
            )*
        }
    };
}

/// A [`Forward`] implementation as a [`Store`].
#[derive(Debug)]
pub struct Forwarding<F>(pub F);

forwarded_operations! {
    submit(NewTask) -> Task;
    submit_many(SubmitManyParams) -> Vec<Task>;
    get(GetParams) -> Option<Task>;
    get_status(GetParams) -> Option<TaskRef>;
    list(ListFilter) -> Vec<TaskRow>;
    stats(StatsParams) -> Vec<TaskCount>;
    count_queued(CountQueuedParams) -> u64;
    oldest_due(StatsParams) -> Vec<QueueAge>;
    count_tasks(CountTasksParams) -> u64;
    children(ChildrenParams) -> Vec<TaskRow>;
    task_key(TaskKeyParams) -> Option<String>;
    cancel(CancelParams) -> Option<Task>;
    retry(RetryParams) -> Option<Task>;
    purge(PurgeFilter) -> Vec<String>;
    claimable(ProbeParams) -> bool;
    claim(ClaimParams) -> Vec<Task>;
    heartbeat(HeartbeatParams) -> Task;
    heartbeat_batch(HeartbeatBatchParams) -> Vec<HeldLease>;
    progress(ProgressParams) -> Task;
    succeed(SettleParams) -> Task;
    complete(SettleParams) -> Task;
    complete_batch(CompleteBatchParams) -> Vec<TaskRef>;
    fail(FailParams) -> Task;
    repair(RepairParams) -> Repaired;
    limit_wait(LimitWaitParams) -> Option<i64>;
}
