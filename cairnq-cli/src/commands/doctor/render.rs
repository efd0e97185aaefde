//! The doctor's report for people: one line per check, the ledger in
//! compact form (runs of consecutive migrations as `0004..0010`), then the
//! problems. `-o json` carries every entry in full.

use cairnq_core::now_ms;

use super::tasks::{LostLease, SCAN_CAP};
use super::{LedgerEntry, Report};
use crate::commands::limit::View;
use crate::humanize::{relative, short};

pub(super) fn report(report: &Report) -> String {
    let versions = &report.protocol_version;
    let schema = &report.schema_version;
    let mut lines = vec![
        format!("backend           {}", report.backend),
        format!("protocol version  {} (this SDK: {})", versions.database.as_deref().unwrap_or("-"), versions.sdk),
        format!(
            "schema version    {} (cairnq_meta: {})",
            schema.last_shared_migration.as_deref().unwrap_or("-"),
            schema.database.as_deref().unwrap_or("-")
        ),
        format!(
            "extensions        {}",
            if report.extensions.is_empty() { "-".into() } else { few(&report.extensions) }
        ),
        format!("ledger            {}", ledger(&report.ledger, report.migrations_pending.len())),
    ];
    if let Some(schemas) = &report.postgres_installations {
        lines.push(format!("installations     {}", few(schemas)));
    }
    if let Some(postgres) = &report.postgres {
        lines.extend(super::postgres::lines(postgres));
    }
    if let Some(sqlite) = &report.sqlite {
        lines.push(match &sqlite.damaged_tables {
            Some(tables) if !tables.is_empty() => {
                format!("integrity         DAMAGED in {}: {}", tables.join(", "), sqlite.integrity)
            }
            Some(_) => format!("integrity         DAMAGED: {}", sqlite.integrity),
            None => format!("integrity         {}", sqlite.integrity),
        });
        lines.push(format!(
            "journal           {} (file {} KiB, wal {} KiB)",
            sqlite.journal_mode,
            sqlite.file_bytes >> 10,
            sqlite.wal_bytes >> 10
        ));
    }
    if let Some(tasks) = &report.tasks {
        lines.push(format!("expired leases    {}", tasks.expired_leases.len()));
        lines.push(lost_leases(&tasks.lost_leases));
        lines.push(match &tasks.oldest_due {
            Some(o) => format!(
                "oldest due        {} ({} on {}), waited {}",
                o.id,
                o.name.as_deref().unwrap_or("finished since"),
                o.queue,
                short(o.waited_ms)
            ),
            None => "oldest due        - (nothing due is waiting)".to_string(),
        });
        lines.push(match tasks.miscounts.len() {
            0 => "task counts       agree with the rows".to_string(),
            n => format!("task counts       {n} disagree with the rows"),
        });
        if tasks.scan_capped {
            lines.push(format!("(scans stopped at {SCAN_CAP} tasks)"));
        }
    }
    if let Some(limits) = &report.limits {
        lines.push(self::limits(&limits.limits, limits.over_limit.len()));
    }
    if report.problems.is_empty() {
        lines.push("no problems found".to_string());
    } else {
        lines.extend(report.problems.iter().map(|p| format!("problem: {p}")));
    }
    lines.join("\n") + "\n"
}

/// "2: tenant:* (concurrency 2) 3 running, 40 waiting over 5 keys;
/// api:maps (100/1m) 0 running, 0 waiting, next start now; 1 key over its
/// limit".
fn limits(limits: &[View], over: usize) -> String {
    if limits.is_empty() {
        return "limits            none set".to_string();
    }
    let now = now_ms();
    let each: Vec<String> = limits
        .iter()
        .map(|l| {
            let rate = l
                .rate_count
                .zip(l.rate_period_ms)
                .map(|(count, period)| format!("{count}/{}", short(u64::try_from(period).unwrap_or(u64::MAX))));
            let bounds: Vec<String> =
                l.concurrency.map(|c| format!("concurrency {c}")).into_iter().chain(rate).collect();
            let next = l.next_admit_ms.map_or_else(String::new, |at| format!(", next start {}", relative(at, now)));
            format!(
                "{} ({}) {} running, {} waiting over {} key(s){next}",
                l.key,
                bounds.join(", "),
                l.running,
                l.waiting,
                l.keys
            )
        })
        .collect();
    let over = if over == 0 { String::new() } else { format!("; {over} key(s) over their limit") };
    const SHOWN: usize = 5;
    let more = each.len().saturating_sub(SHOWN);
    let more = if more > 0 { format!("; and {more} more (cairnq limit ls)") } else { String::new() };
    format!("limits            {}: {}{more}{over}", limits.len(), each[..each.len().min(SHOWN)].join("; "))
}

/// "2 requeued after an expired lease (a worker died or stalled): task_a
/// (attempt 1), task_b (attempt 2)".
fn lost_leases(lost: &[LostLease]) -> String {
    if lost.is_empty() {
        return "lost attempts     0".to_string();
    }
    let named: Vec<String> = lost.iter().map(|l| format!("{} (attempt {})", l.id, l.attempt)).collect();
    format!(
        "lost attempts     {} task(s) back in the queue or running again after an expired lease \
         (a worker died or stalled): {}",
        lost.len(),
        few(&named)
    )
}

/// "12 applied: 0001..0002, 0004..0010, ext_0001..0003 (last 3m ago); 0 pending".
fn ledger(entries: &[LedgerEntry], pending: usize) -> String {
    let Some(last) = entries.iter().map(|e| e.applied_at_ms).max() else {
        return format!("empty; {pending} pending");
    };
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    format!("{} applied: {} (last {}); {pending} pending", entries.len(), runs(&names), relative(last, now_ms()))
}

/// Names in order, consecutive ordinals of one prefix joined into a run.
fn runs(names: &[&str]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut run: Option<(&str, u32, u32)> = None;
    for name in names {
        match (run, ordinal(name)) {
            (Some((prefix, first, last)), Some((p, n))) if p == prefix && n == last + 1 => {
                run = Some((prefix, first, n))
            }
            (open, parsed) => {
                parts.extend(open.map(|(prefix, first, last)| span(prefix, first, last)));
                run = parsed.map(|(prefix, n)| (prefix, n, n));
                if parsed.is_none() {
                    parts.push((*name).to_string());
                }
            }
        }
    }
    parts.extend(run.map(|(prefix, first, last)| span(prefix, first, last)));
    parts.join(", ")
}

fn span(prefix: &str, first: u32, last: u32) -> String {
    if first == last { format!("{prefix}{first:04}") } else { format!("{prefix}{first:04}..{last:04}") }
}

/// `0004_x.sql` -> ("", 4); `ext_0002_y.sql` -> ("ext_", 2); other names
/// (another SDK's own) -> None.
fn ordinal(name: &str) -> Option<(&str, u32)> {
    let start = name.find(|c: char| c.is_ascii_digit())?;
    let (prefix, rest) = name.split_at(start);
    let digits = rest.get(..4)?;
    let valid = digits.bytes().all(|b| b.is_ascii_digit()) && rest[4..].starts_with('_');
    let prefix_ok = prefix.is_empty() || prefix.ends_with('_');
    if valid && prefix_ok { digits.parse().ok().map(|n| (prefix, n)) } else { None }
}

/// The first few names, and how many more.
pub(super) fn few(names: &[String]) -> String {
    const SHOWN: usize = 5;
    match names.len().checked_sub(SHOWN) {
        Some(more) if more > 0 => format!("{} and {more} more", names[..SHOWN].join(", ")),
        _ => names.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consecutive_migrations_of_one_kind_join_into_runs() {
        let names = [
            "0001_init.sql",
            "0002_purge_index.sql",
            "0004_lease_index.sql",
            "0005_x.sql",
            "ext_0001_schedules.sql",
            "ext_0002_task_counts.sql",
            "py_extra.sql",
            "ext_0004_later.sql",
        ];
        assert_eq!(runs(&names), "0001..0002, 0004..0005, ext_0001..0002, py_extra.sql, ext_0004");
        assert_eq!(ordinal("é0001_x.sql"), None, "no panic on odd names");
        assert_eq!(ordinal("0001"), None);
    }
}
