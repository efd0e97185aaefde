//! The task context as a [`SettleHook`]: the one door through which a
//! backend's own settle (inside the application's transaction:
//! `cairnq_postgres::SucceedIn`, `cairnq_sqlite::SucceedWith`) settles an
//! attempt. The write goes through the worker's one settle claim
//! (`Shared::settle_by`), so the worker knows the task is settled: no
//! second write, no lost-lease report for it later. The worker names no
//! backend.

use std::future::Future;
use std::pin::Pin;

use cairnq_core::{SettleHook, SettleWrite, Settled, Store};

use crate::context::TaskContext;
use crate::settle::Settlement;

impl SettleHook for TaskContext {
    fn task_id(&self) -> &str {
        TaskContext::task_id(self)
    }

    fn worker_id(&self) -> &str {
        TaskContext::worker_id(self)
    }

    fn backend(&self) -> &'static str {
        self.core().session.backend()
    }

    fn holds_leases_in(&self, store: &dyn Store) -> bool {
        self.core().session.is_on(store)
    }

    fn settle_by<'a>(&'a self, write: SettleWrite<'a>) -> Settled<'a> {
        Box::pin(self.core().settle_by(self.task(), self.state(), write))
    }

    fn fail_panicked<'a>(&'a self, message: String) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>> {
        let failure = Settlement::Fail(crate::call::panic_error(message));
        Box::pin(self.core().settle_outcome(self.task(), self.state(), failure))
    }
}
