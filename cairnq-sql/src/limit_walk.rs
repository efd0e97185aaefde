//! How a limit-aware draw finds the rows it may start, without reading the
//! rows it may not.
//!
//! A draw on one queue walks the queued index of `ext_0007` group by group
//! (priority desc, then limit key): a group is one key's queued rows at one
//! priority (tasks without a key are the group of the empty key), so a key
//! at its limit costs one step of the walk however many tasks it holds.
//! Groups of one priority take turns: each offers the due rows its limit
//! lets start, and the draw takes one from each in key order, round after
//! round, before it looks at a lower priority (fair share: a key with a
//! huge backlog and a key with a few tasks both progress). Within a group,
//! the oldest due rows go first.
//!
//! A draw over several queues walks the claim order of every row instead,
//! passing over the keys found at their limit: correct, and as costly as
//! the throttled rows it passes.

use std::collections::HashSet;
use std::future::Future;

use cairnq_protocol::Sql;
use serde::Deserialize;
use serde_json::Value;

use super::flows::{Executor, RangeReads, take_claimed};
use super::limits::{LimitedClaim, decode, text_key};
use super::query::Query;
use cairnq_core::Result;
use cairnq_core::Task;
use cairnq_core::store::{ClaimDraw, ClaimParams, TaskRow};

/// Above every priority (a 32-bit column): the cursor of a walk's start.
const ABOVE_TOP: i64 = 1 << 31;

/// A due row a walk may take, with its limit key.
#[derive(Deserialize)]
struct Candidate {
    id: String,
    key: Option<Value>,
}

/// One turn over the groups of one priority: the groups (each with how
/// many rows it may give, its budget or share), and how many rows the
/// draw still needs.
struct Level<'a> {
    draw: &'a ClaimDraw,
    queue: &'a str,
    wanted: &'a [(&'a (i64, String), usize)],
    need: usize,
}

/// What one turn over a level did: the tasks claimed, the rows drawn (as
/// [`take_claimed`] counts them), how many rows each wanted group gave,
/// and whether every row picked was gone (another claimer took them: the
/// draw ends).
struct Turn {
    tasks: Vec<Task>,
    drawn: usize,
    given: Vec<usize>,
    stalled: bool,
}

/// A row picked to start: its id and limit key.
type Pick = (String, Option<String>);

/// What one group offers: its key, the rows it may start.
struct Offer {
    key: Option<String>,
    ids: std::vec::IntoIter<String>,
}

impl LimitedClaim {
    /// One draw of up to `limit` rows; the tasks and how many rows were
    /// drawn (as [`take_claimed`] counts them). `first_groups`: the walk's
    /// first groups, read already ([`first_groups`](Self::first_groups)).
    pub(crate) async fn draw(
        &mut self,
        exec: &impl Executor,
        params: &ClaimParams,
        draw: &ClaimDraw,
        limit: u32,
        first_groups: Option<Vec<(i64, String)>>,
    ) -> Result<(Vec<Task>, usize)> {
        match draw.queues.as_slice() {
            [queue] => self.walk_groups(exec, params, draw, queue, limit, first_groups).await,
            _ => self.walk_rows(exec, params, draw, limit).await,
        }
    }

    /// The read of the first groups a draw of up to `limit` rows walks, for
    /// a draw that walks groups (of one queue, `limit` above zero): it
    /// depends on no limit, so a claim sends it beside its read of the
    /// limits, and hands the groups to [`draw`](Self::draw).
    pub(crate) fn first_groups<'e>(
        exec: &'e impl Executor,
        draw: &'e ClaimDraw,
        limit: u32,
    ) -> Option<impl Future<Output = Result<Vec<(i64, String)>>> + 'e> {
        match draw.queues.as_slice() {
            [queue] if limit > 0 => Some(read_groups(exec, queue, (ABOVE_TOP, String::new()), first_max_groups(limit))),
            _ => None,
        }
    }

    /// The group walk of one queue (see the module docs).
    async fn walk_groups(
        &mut self,
        exec: &impl Executor,
        params: &ClaimParams,
        draw: &ClaimDraw,
        queue: &str,
        limit: u32,
        mut first_groups: Option<Vec<(i64, String)>>,
    ) -> Result<(Vec<Task>, usize)> {
        let (mut tasks, mut drawn) = (Vec::new(), 0);
        let mut cursor = (ABOVE_TOP, String::new());
        while drawn < limit as usize {
            let max_groups = limit as usize - drawn + self.admission.blocked().len() + 1;
            let groups = match first_groups.take() {
                Some(groups) if max_groups == first_max_groups(limit) => groups,
                _ => read_groups(exec, queue, cursor.clone(), max_groups).await?,
            };
            let groups = self.lock_groups(exec, groups).await?;
            let exhausted = groups.len() < max_groups;
            if let Some(last) = groups.last() {
                cursor = last.clone();
            }
            for level in groups.chunk_by(|a, b| a.0 == b.0) {
                let (taken, n, stalled) =
                    self.take_level(exec, params, draw, queue, level, limit as usize - drawn).await?;
                tasks.extend(taken);
                drawn += n;
                if stalled || drawn >= limit as usize {
                    return Ok((tasks, drawn));
                }
            }
            if exhausted {
                break;
            }
        }
        Ok((tasks, drawn))
    }

    /// Locks the keys of `groups` (their usage is read beside the next
    /// fetch of rows: [`read_unread_beside`](LimitedClaim::read_unread_beside));
    /// the groups.
    async fn lock_groups(&mut self, exec: &impl Executor, groups: Vec<(i64, String)>) -> Result<Vec<(i64, String)>> {
        self.lock_keys(exec, groups.iter().map(|(_, key)| key.as_str()).filter(|k| !k.is_empty())).await?;
        Ok(groups)
    }

    /// Up to `need` rows of one priority's groups, taking turns. Each group
    /// is asked for its share of what is needed, not for all of it (a
    /// claim of 1,000 over 16 keys reads some 1,000 rows, not 16,000);
    /// a group that filled its share may hold more, so while rows are
    /// still needed those groups are asked again (the rows just claimed
    /// run now, and the next read starts after them). Each turn reads and
    /// claims as the executor prefers ([`RangeReads`]). The tasks, the rows
    /// drawn, and whether a claim found every row picked gone (another
    /// claimer took them: the draw ends).
    async fn take_level(
        &mut self,
        exec: &impl Executor,
        params: &ClaimParams,
        draw: &ClaimDraw,
        queue: &str,
        level: &[(i64, String)],
        need: usize,
    ) -> Result<(Vec<Task>, usize, bool)> {
        let (mut tasks, mut drawn) = (Vec::new(), 0);
        let mut open: Vec<&(i64, String)> = level.iter().collect();
        let together = exec.range_reads() == RangeReads::Together;
        while drawn < need && !open.is_empty() {
            if together {
                // Claimed as they are read: every key's budget first.
                self.read_unread_beside(exec, async { Ok(()) }).await?;
            }
            let share = (need - drawn).div_ceil(open.len());
            let wanted: Vec<(&(i64, String), usize)> = open
                .iter()
                .map(|group| {
                    let key = Some(group.1.as_str()).filter(|k| !k.is_empty());
                    let budget = key.map_or(u64::MAX, |k| self.admission.budget(k));
                    (*group, usize::try_from(budget).unwrap_or(usize::MAX).min(share))
                })
                .filter(|(_, n)| *n > 0)
                .collect();
            if wanted.is_empty() {
                break;
            }
            let level = Level { draw, queue, wanted: &wanted, need: need - drawn };
            let turn = match together {
                true => self.claim_groups(exec, params, &level).await?,
                false => self.read_then_claim(exec, params, &level).await?,
            };
            tasks.extend(turn.tasks);
            drawn += turn.drawn;
            if turn.stalled {
                return Ok((tasks, drawn, true));
            }
            if turn.drawn == 0 {
                break;
            }
            // A group that gave all it was asked for may hold more.
            open =
                wanted.iter().zip(&turn.given).filter(|((_, n), given)| **given == *n).map(|((g, _), _)| *g).collect();
        }
        Ok((tasks, drawn, false))
    }

    /// One turn of a level read group by group: each group's rows read
    /// (beside the usage of keys not read yet), the groups taking turns
    /// within their limits, the rows picked claimed by id.
    async fn read_then_claim(&mut self, exec: &impl Executor, params: &ClaimParams, level: &Level<'_>) -> Result<Turn> {
        let rows = self.read_unread_beside(exec, group_rows(exec, level)).await?;
        let given = rows.iter().map(Vec::len).collect();
        let offers = level.wanted.iter().zip(rows).map(|((group, _), ids)| Offer {
            key: Some(group.1.clone()).filter(|k| !k.is_empty()),
            ids: ids.into_iter(),
        });
        let picked = self.take_turns(offers.collect(), level.need);
        if picked.is_empty() {
            return Ok(Turn { tasks: Vec::new(), drawn: 0, given, stalled: false });
        }
        let (tasks, drawn) = self.claim_picked(exec, params, &picked).await?;
        Ok(Turn { tasks, drawn, given, stalled: drawn == 0 })
    }

    /// One turn of a level in one statement (`claim_limit_groups`): the
    /// groups' rows read, taking turns, and claimed. Every budget was read
    /// before, so each row claimed is a start its key's limit allows.
    async fn claim_groups(&mut self, exec: &impl Executor, params: &ClaimParams, level: &Level<'_>) -> Result<Turn> {
        let Some(((priority, _), _)) = level.wanted.first() else {
            return Ok(Turn { tasks: Vec::new(), drawn: 0, given: Vec::new(), stalled: false });
        };
        let q = Query::new(Sql::ClaimLimitGroups)
            .arg("queue", level.queue)
            .arg("priority", *priority)
            .arg("keys", level.wanted.iter().map(|((_, key), _)| key.clone()).collect::<Vec<_>>())
            .arg("limits", level.wanted.iter().map(|(_, n)| count_arg(*n)).collect::<Vec<_>>())
            .arg("need", count_arg(level.need))
            .arg("worker_id", &params.worker_id)
            .arg("lease_ms", params.lease_ms);
        let rows: Vec<TaskRow> = exec.rows(q.names(level.draw.names.as_deref())).await?;
        let mut given = vec![0; level.wanted.len()];
        for task in rows.iter().filter_map(|row| row.as_ref().ok()) {
            let key = task.limit_key().unwrap_or_default();
            if let Some(group) = level.wanted.iter().position(|((_, k), _)| *k == key) {
                given[group] += 1;
            }
            let started = self.admission.try_start(Some(key.as_str()).filter(|k| !k.is_empty()));
            debug_assert!(started, "a row claimed within its key's budget");
        }
        let (tasks, drawn) = take_claimed(exec, params, rows).await?;
        Ok(Turn { tasks, drawn, given, stalled: false })
    }

    /// Up to `need` rows from `offers` (one priority's groups, in key
    /// order): the groups take turns, one row each per round, while their
    /// limits allow.
    fn take_turns(&mut self, mut offers: Vec<Offer>, need: usize) -> Vec<Pick> {
        let mut picked = Vec::new();
        let mut open = vec![true; offers.len()];
        while picked.len() < need && open.iter().any(|o| *o) {
            for (offer, open) in offers.iter_mut().zip(open.iter_mut()) {
                if picked.len() >= need || !*open {
                    continue;
                }
                match offer.ids.next() {
                    Some(id) if self.admission.try_start(offer.key.as_deref()) => {
                        picked.push((id, offer.key.clone()));
                    }
                    _ => *open = false,
                }
            }
        }
        picked
    }

    /// The walk over every due row of several queues in claim order,
    /// passing over keys at their limit (see the module docs).
    async fn walk_rows(
        &mut self,
        exec: &impl Executor,
        params: &ClaimParams,
        draw: &ClaimDraw,
        limit: u32,
    ) -> Result<(Vec<Task>, usize)> {
        let (mut tasks, mut drawn) = (Vec::new(), 0);
        while drawn < limit as usize {
            let want = limit as usize - drawn;
            let blocked = self.admission.blocked();
            let q = Query::new(Sql::SelectLimitCandidates)
                .arg("limit", count_arg(want))
                .arg("blocked", blocked.clone())
                .scope(&draw.queues, draw.names.as_deref());
            let candidates: Vec<Pick> = exec
                .rows::<String>(q)
                .await?
                .iter()
                .map(|t| decode::<Candidate>("claim candidate", t).map(|c| (c.id, c.key.and_then(text_key))))
                .collect::<Result<_>>()?;
            self.meet_keys(exec, candidates.iter().filter_map(|(_, key)| key.as_deref())).await?;
            let picked: Vec<Pick> =
                candidates.iter().filter(|(_, key)| self.admission.try_start(key.as_deref())).cloned().collect();
            if !picked.is_empty() {
                let (taken, n) = self.claim_picked(exec, params, &picked).await?;
                tasks.extend(taken);
                drawn += n;
                if n == 0 {
                    break;
                }
            }
            // Nothing more to see, or nothing new found at its limit (the
            // same rows would come back).
            if candidates.len() < want || (picked.is_empty() && self.admission.blocked() == blocked) {
                break;
            }
        }
        Ok((tasks, drawn))
    }

    /// Claims the rows picked, by id; a row another claimer took meanwhile
    /// gives its start back. The tasks, and the rows drawn.
    async fn claim_picked(
        &mut self,
        exec: &impl Executor,
        params: &ClaimParams,
        picked: &[Pick],
    ) -> Result<(Vec<Task>, usize)> {
        let ids: Vec<String> = picked.iter().map(|(id, _)| id.clone()).collect();
        let q = Query::new(Sql::ClaimTasksById)
            .arg("ids", ids)
            .arg("worker_id", &params.worker_id)
            .arg("lease_ms", params.lease_ms);
        let rows: Vec<TaskRow> = exec.rows(q).await?;
        let got: HashSet<&str> = rows
            .iter()
            .filter_map(|row| match row {
                Ok(task) => Some(task.id.as_str()),
                Err(undecodable) => undecodable.task_id.as_deref(),
            })
            .collect();
        for (id, key) in picked {
            if let (false, Some(key)) = (got.contains(id.as_str()), key) {
                self.admission.unstart(key);
            }
        }
        take_claimed(exec, params, rows).await
    }
}

/// Each wanted group's due rows, oldest first, one statement a group.
async fn group_rows(exec: &impl Executor, level: &Level<'_>) -> Result<Vec<Vec<String>>> {
    let reads = level.wanted.iter().map(|((priority, key), n)| {
        let q = Query::new(Sql::SelectLimitGroupRows)
            .arg("queue", level.queue)
            .arg("priority", *priority)
            .arg("key", key.clone())
            .arg("limit", count_arg(*n));
        exec.rows::<String>(q.names(level.draw.names.as_deref()))
    });
    futures::future::try_join_all(reads).await
}

/// A count as a statement's argument.
fn count_arg(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// How many groups a walk of up to `limit` rows reads first: one a row,
/// and one more to know whether there are more (no key is blocked yet).
fn first_max_groups(limit: u32) -> usize {
    limit as usize + 1
}

/// Up to `max_groups` groups after `cursor`, as (priority, key text).
async fn read_groups(
    exec: &impl Executor,
    queue: &str,
    cursor: (i64, String),
    max_groups: usize,
) -> Result<Vec<(i64, String)>> {
    let q = Query::new(Sql::SelectLimitGroups)
        .arg("queue", queue)
        .arg("priority", cursor.0)
        .arg("after", cursor.1)
        .arg("max_groups", count_arg(max_groups));
    exec.rows::<String>(q)
        .await?
        .iter()
        .map(|t| decode::<(i64, Value)>("limit group", t).map(|(p, k)| (p, text_key(k).unwrap_or_default())))
        .collect()
}
