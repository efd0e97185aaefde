//! Names what is wrong with a database file, from the file system.
//!
//! SQLite reports where it failed ("attempt to write a readonly database",
//! "unable to open database file"), not why. When it refuses a file, these
//! checks look at what it needs — a regular file with the SQLite header,
//! readable and writable, in a directory where it can create the `-wal` and
//! `-shm` files WAL mode keeps beside it (or those files writable when they
//! exist) — and say which need is not met, with the path. They try the
//! operation itself (open for writing, create a file) rather than reading
//! permission bits, which mean nothing to root and miss read-only mounts.
//!
//! Only run on an error path, on a connection's own thread: they make a few
//! blocking file-system calls, and the directory check creates and removes
//! an empty probe file.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read};
use std::path::{Path, PathBuf};

/// The first 16 bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What is wrong with `path` as a SQLite database in WAL mode, most
/// fundamental first (joined with "; "); `None` when nothing visible is.
pub(crate) fn diagnose(path: &Path) -> Option<String> {
    if path.is_dir() {
        return Some(format!("{} is a directory, not a database file", path.display()));
    }
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    match fs::metadata(&dir) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Some(format!("the directory {} does not exist", dir.display()));
        }
        Err(e) => return Some(format!("the directory {} cannot be read: {e}", dir.display())),
        Ok(meta) if !meta.is_dir() => return Some(format!("{} is not a directory", dir.display())),
        Ok(_) => {}
    }
    let mut findings = Vec::new();
    match File::open(path) {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if refuses_new_files(&dir) {
                findings.push(format!(
                    "the directory {} is not writable: SQLite needs to create {name} there",
                    dir.display()
                ));
            }
            return join(findings);
        }
        Err(e) => return Some(format!("{} cannot be read by this process: {e}", path.display())),
        Ok(file) => {
            if let Some(finding) = foreign_header(path, file) {
                return Some(finding);
            }
        }
    }
    let file = unwritable(path);
    // SQLite creates the `-wal` and `-shm` files with the database file's
    // permissions: when the file is read-only they are too, and saying so
    // would only repeat the cause.
    findings.extend(wal_files(path, &dir, &name, file.is_none()));
    if let Some(finding) = file {
        findings.insert(0, format!("the database file {finding}, so SQLite opened it read-only"));
    }
    join(findings)
}

fn join(findings: Vec<String>) -> Option<String> {
    if findings.is_empty() { None } else { Some(findings.join("; ")) }
}

/// A non-empty file that does not start with the SQLite header (an empty
/// file is a database SQLite has yet to write).
fn foreign_header(path: &Path, file: File) -> Option<String> {
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    if file.take(SQLITE_HEADER.len() as u64).read_to_end(&mut head).is_err() || head.is_empty() {
        return None;
    }
    (head != SQLITE_HEADER)
        .then(|| format!("{} is not a SQLite database: it does not start with the SQLite file header", path.display()))
}

/// The `-wal` and `-shm` files: each must be writable when it exists
/// (checked when `check_existing`), and the directory must take new files
/// when either is missing.
fn wal_files(path: &Path, dir: &Path, name: &str, check_existing: bool) -> Vec<String> {
    let mut findings = Vec::new();
    let mut missing = false;
    for suffix in ["-wal", "-shm"] {
        let mut side = OsString::from(path.as_os_str());
        side.push(suffix);
        let side = PathBuf::from(side);
        if side.exists() {
            if let Some(finding) = unwritable(&side).filter(|_| check_existing) {
                findings.push(format!("{finding} (SQLite writes it in WAL mode)"));
            }
        } else {
            missing = true;
        }
    }
    if missing && refuses_new_files(dir) {
        findings.insert(
            0,
            format!(
                "the directory {} holding {name} is not writable: SQLite needs to create {name}-wal and {name}-shm there",
                dir.display()
            ),
        );
    }
    findings
}

/// Why `path` (an existing file) cannot be opened for writing, if it cannot.
/// Opening for writing changes nothing in the file.
fn unwritable(path: &Path) -> Option<String> {
    match OpenOptions::new().write(true).open(path) {
        Ok(_) => None,
        Err(e) if e.kind() == ErrorKind::PermissionDenied => {
            Some(format!("{} is not writable by this process", path.display()))
        }
        Err(e) if e.kind() == ErrorKind::ReadOnlyFilesystem => {
            Some(format!("{} is on a read-only file system", path.display()))
        }
        Err(e) => Some(format!("{} cannot be opened for writing: {e}", path.display())),
    }
}

/// Whether `dir` refuses a new file: tried by creating (and removing) an
/// empty probe file. Errors other than a refusal count as "not refused":
/// they say nothing sure about the directory.
fn refuses_new_files(dir: &Path) -> bool {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos());
    let probe = dir.join(format!(".cairnq-write-probe-{}-{}", std::process::id(), nanos.unwrap_or(0)));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            // Best effort: the probe is empty and its name is ours alone.
            let _ = fs::remove_file(&probe);
            false
        }
        Err(e) => matches!(e.kind(), ErrorKind::PermissionDenied | ErrorKind::ReadOnlyFilesystem),
    }
}

#[cfg(test)]
mod tests {
    //! What can be shown without another user: see `tests/it/open.rs`
    //! for read-only files and directories (run as an unprivileged user).

    use super::*;

    #[test]
    fn a_sound_file_or_a_new_one_shows_nothing() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("queue.db");
        assert_eq!(diagnose(&path), None, "a new file in a writable directory");
        rusqlite::Connection::open(&path).and_then(|c| c.execute_batch("create table t(x)")).expect("create");
        assert_eq!(diagnose(&path), None, "a real database");
        assert_eq!(fs::read_dir(dir.path()).expect("list").count(), 1, "the probe file was removed");
    }

    #[test]
    fn directories_missing_parents_and_foreign_files_are_named() {
        let dir = tempfile::tempdir().expect("temp dir");
        let shown = diagnose(dir.path()).expect("a directory");
        assert!(shown.ends_with("is a directory, not a database file"), "{shown}");
        let shown = diagnose(&dir.path().join("gone").join("queue.db")).expect("no parent");
        assert!(shown.starts_with("the directory") && shown.ends_with("gone does not exist"), "{shown}");
        let junk = dir.path().join("junk.db");
        fs::write(&junk, "not a database at all").expect("write");
        let shown = diagnose(&junk).expect("junk");
        assert!(shown.contains("junk.db is not a SQLite database"), "{shown}");
    }
}
