//! Durability: a process killed mid-burst lost nothing it acknowledged.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::child::ACK;
use crate::common::{count, fresh_path, spawn_child};

#[test]
fn sigkill_mid_burst_keeps_every_acknowledged_submit() {
    let fresh = fresh_path();
    let mut child = spawn_child("submit_burst", &fresh.path, Stdio::piped());
    let stdout = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut acked = Vec::new();
    while acked.len() < 300 {
        let line = lines.next().expect("the child exited before 300 acks").expect("read line");
        acked.extend(line.split_once(ACK).map(|(_, id)| id.to_string()));
    }
    // Child::kill is SIGKILL on Unix: no destructor, no flush, no commit.
    child.kill().expect("kill child");
    // Acks the child printed before it died are still in the pipe.
    for line in lines {
        acked.extend(line.expect("read line").split_once(ACK).map(|(_, id)| id.to_string()));
    }
    child.wait().expect("reap child");

    // Read-write: the first connection after the crash recovers the WAL.
    let conn = rusqlite::Connection::open(&fresh.path).expect("open after crash");
    let mut missing = Vec::new();
    for id in &acked {
        let found: i64 =
            conn.query_row("select count(*) from cairnq_tasks where id = ?1", [id], |r| r.get(0)).expect("lookup");
        if found != 1 {
            missing.push(id.clone());
        }
    }
    assert!(missing.is_empty(), "{} of {} acknowledged ids are missing: {missing:?}", missing.len(), acked.len());
    assert!(count(&fresh.path, "select count(*) from cairnq_tasks") >= acked.len() as i64);
}
