//! Where the CPU went during a multi-process run, read from `/proc` (Linux;
//! elsewhere every reading is zero): the whole machine's busy share, and
//! for Postgres the server's processes (the postmaster and its children),
//! so a run that does not scale can say whether the server or the clients
//! used the cores. Each worker process reports its own CPU time as it ends
//! (`roles`).

use cairnq_core::Result;

use cairnq_testkit::StoreLocator;

/// Busy and total jiffies of the whole machine (`/proc/stat`'s `cpu` line).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MachineTicks {
    busy: u64,
    total: u64,
}

impl MachineTicks {
    pub(super) fn now() -> Self {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let fields: Vec<u64> =
            stat.lines().next().unwrap_or_default().split_whitespace().skip(1).filter_map(|v| v.parse().ok()).collect();
        // user nice system idle iowait irq softirq steal ...: idle and
        // iowait are the idle ones.
        let total: u64 = fields.iter().take(8).sum();
        let idle = fields.get(3).copied().unwrap_or(0) + fields.get(4).copied().unwrap_or(0);
        Self { busy: total.saturating_sub(idle), total }
    }

    /// The busy share of every core since `earlier` (0..1).
    pub(super) fn busy_since(&self, earlier: &Self) -> f64 {
        let total = self.total.saturating_sub(earlier.total);
        self.busy.saturating_sub(earlier.busy) as f64 / total.max(1) as f64
    }
}

/// The Postgres server's processes, found from one backend's parent.
#[derive(Debug, Clone, Copy)]
pub(super) struct Server {
    postmaster: u32,
}

impl Server {
    /// The server behind `locator` when it runs on this host (`None` for
    /// SQLite, or a server this process cannot see in `/proc`).
    pub(super) async fn of(locator: &StoreLocator) -> Result<Option<Self>> {
        match locator {
            StoreLocator::Postgres { dsn, .. } => {
                let raw = cairnq_testkit::postgres::raw(dsn).await;
                let row = raw
                    .query_one("select pg_backend_pid()", &[])
                    .await
                    .map_err(|e| cairnq_core::Error::storage("backend pid", e))?;
                let backend = u32::try_from(row.get::<_, i32>(0)).unwrap_or(0);
                Ok(parent_of(backend).map(|postmaster| Self { postmaster }))
            }
            _ => Ok(None),
        }
    }

    /// CPU seconds the postmaster and its children have used so far (a
    /// child that ended meanwhile is missed: the pool keeps its
    /// connections for the run).
    pub(super) fn cpu_seconds(&self) -> f64 {
        let Ok(entries) = std::fs::read_dir("/proc") else { return 0.0 };
        entries
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| *pid == self.postmaster || parent_of(*pid) == Some(self.postmaster))
            .filter_map(cpu_ns)
            .sum::<u64>() as f64
            / 1e9
    }
}

/// CPU seconds every thread of process `pid` has used so far
/// (`/proc/PID/task/*/schedstat`).
pub(super) fn process_cpu_seconds(pid: u32) -> f64 {
    let Ok(threads) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0.0 };
    let ns: u64 = threads
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// The parent of `pid` (`/proc/PID/stat`, the field after the state).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// Nanoseconds `pid` ran on a CPU (`/proc/PID/schedstat`; Postgres
/// processes are single-threaded).
fn cpu_ns(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?.split_whitespace().next()?.parse().ok()
}
