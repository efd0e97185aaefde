//! The writer jobs of flow control that first ask whether the file has the
//! limits table of ext_0006 (a file another SDK installed, opened with
//! `Install::Existing`, may not): a claim enforces limits only where it
//! is, and the wait for a rate is only read there.

use cairnq_core::Result;
use cairnq_core::Task;
use cairnq_core::store::{ClaimParams, LimitWaitParams};
use cairnq_sql::{LimitMode, flows, limits};

use crate::exec::SqliteExec;
use crate::group_commit::WriteCtx;
use crate::read;

/// One claim transaction, limit-aware where the file has limits.
pub(crate) fn claim(ctx: &mut WriteCtx<'_>, params: &ClaimParams) -> Result<Vec<Task>> {
    let mode = read::limit_mode(ctx.conn)?;
    let exec = SqliteExec::writing(ctx);
    exec.run(flows::claim_with(&exec, params, mode))
}

/// How long until a rate next admits a start (`None` without limits).
pub(crate) fn limit_wait(ctx: &mut WriteCtx<'_>, params: &LimitWaitParams) -> Result<Option<i64>> {
    if read::limit_mode(ctx.conn)? == LimitMode::Off {
        return Ok(None);
    }
    let exec = SqliteExec::writing(ctx);
    exec.run(limits::limit_wait(&exec, params))
}
