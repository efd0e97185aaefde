//! What the path given to [`SqliteStore::open`](crate::SqliteStore::open)
//! names: a database file, or a database in memory (`:memory:`, or a
//! `file:` URI with `mode=memory`), and the key under which the stores of
//! one process share one database's threads (see `registry`).
//!
//! A `file:` URI naming a file is refused rather than half supported: the
//! file-system checks that name a cause (`diagnose`), the cross-process
//! watcher (which reads `<path>-shm`) and the registry key all need the
//! file's path, which only SQLite would know.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use cairnq_core::{Error, Result};

/// SQLite's name for a private in-memory database.
pub(crate) const MEMORY: &str = ":memory:";

/// Where a store's database lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A database file, at the path as given.
    File(PathBuf),
    /// A database in memory. `uri` is what SQLite opens; `shared` is the
    /// shared-cache name (percent-decoded) when other opens in this process
    /// reach the same database, `None` when every open gets its own.
    Memory { uri: String, shared: Option<String> },
}

/// What the stores of one process that share one database's threads have
/// in common.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// A database file, by its canonical path.
    File(PathBuf),
    /// A shared-cache in-memory database, by its name.
    Memory(String),
}

impl Location {
    /// Reads `path`. Refuses (nothing opened, nothing created) an empty
    /// path, which SQLite would turn into a private temporary database per
    /// connection, and a `file:` URI that does not name a database in
    /// memory.
    pub(crate) fn parse(path: &Path) -> Result<Self> {
        let text = path.to_string_lossy();
        if text.is_empty() {
            return Err(invalid(
                "an empty path names no database (SQLite would give every connection a temporary \
                 database of its own); use SqliteStore::in_memory() for a database in memory",
            ));
        }
        if text == MEMORY {
            return Ok(Self::Memory { uri: MEMORY.into(), shared: None });
        }
        let Some(rest) = text.strip_prefix("file:") else { return Ok(Self::File(path.to_path_buf())) };
        let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
        let param = |key: &str| {
            // SQLite reads the first occurrence of a parameter.
            query.split('&').filter_map(|p| p.split_once('=')).find(|(k, _)| *k == key).map(|(_, v)| v)
        };
        if param("mode") != Some("memory") && name != MEMORY {
            return Err(invalid(&format!(
                "{text} is a file: URI naming a file; give the file's path instead (URIs are taken \
                 only for databases in memory, with mode=memory)"
            )));
        }
        let shared = (param("cache") == Some("shared")).then(|| percent_decoded(name).into_owned());
        Ok(Self::Memory { uri: text.into_owned(), shared })
    }

    /// The file's path, `None` in memory.
    pub(crate) fn file(&self) -> Option<&Path> {
        match self {
            Self::File(path) => Some(path),
            Self::Memory { .. } => None,
        }
    }
}

fn invalid(message: &str) -> Error {
    Error::Validation { field: "path", message: message.to_string() }
}

/// `%HH` escapes decoded as SQLite decodes a URI's path, so two spellings
/// of one shared-cache name share one database here as they do in SQLite.
fn percent_decoded(name: &str) -> Cow<'_, str> {
    if !name.contains('%') {
        return Cow::Borrowed(name);
    }
    let bytes = name.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = bytes.get(i + 1..i + 3).and_then(|hex| std::str::from_utf8(hex).ok());
        match (bytes[i], escaped.and_then(|hex| u8::from_str_radix(hex, 16).ok())) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

/// The canonical path of the database file at `path`, whether or not it
/// exists yet (then its directory's canonical path and its name); `None`
/// when even the directory cannot be resolved (opening will fail and say
/// why). Blocking file-system calls: run it off the async runtime.
pub(crate) fn canonical_file(path: &Path) -> Option<PathBuf> {
    if let Ok(found) = std::fs::canonicalize(path) {
        return Some(found);
    }
    let name = path.file_name()?;
    let dir = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::canonicalize(dir).ok().map(|dir| dir.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Location> {
        Location::parse(Path::new(text))
    }

    fn memory(uri: &str, shared: Option<&str>) -> Location {
        Location::Memory { uri: uri.into(), shared: shared.map(str::to_string) }
    }

    #[test]
    fn paths_memory_and_shared_cache_uris_are_told_apart() {
        assert_eq!(parse("queue.db").ok(), Some(Location::File("queue.db".into())));
        assert_eq!(parse("./file:odd.db").ok(), Some(Location::File("./file:odd.db".into())));
        assert_eq!(parse(":memory:").ok(), Some(memory(":memory:", None)));
        let private = "file:scratch?mode=memory";
        assert_eq!(parse(private).ok(), Some(memory(private, None)));
        let shared = "file:jobs?mode=memory&cache=shared";
        assert_eq!(parse(shared).ok(), Some(memory(shared, Some("jobs"))));
        let reordered = "file:j%6Fbs?cache=shared&mode=memory";
        assert_eq!(parse(reordered).ok(), Some(memory(reordered, Some("jobs"))));
        let anonymous = "file::memory:?cache=shared";
        assert_eq!(parse(anonymous).ok(), Some(memory(anonymous, Some(":memory:"))));
    }

    #[test]
    fn an_empty_path_and_file_uris_naming_files_are_refused() {
        for bad in ["", "file:queue.db", "file:/tmp/queue.db?mode=rwc", "file:jobs?cache=shared"] {
            match parse(bad) {
                Err(Error::Validation { field: "path", message }) => {
                    assert!(bad.is_empty() || message.starts_with(bad), "{bad}: {message}");
                }
                other => panic!("{bad:?} was not refused: {other:?}"),
            }
        }
    }

    #[test]
    fn percent_escapes_decode_and_broken_ones_stay() {
        assert_eq!(percent_decoded("a%20b"), "a b");
        assert_eq!(percent_decoded("100%"), "100%");
        assert_eq!(percent_decoded("%zz%4"), "%zz%4");
    }

    #[test]
    fn a_file_not_yet_created_resolves_through_its_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        let canonical = std::fs::canonicalize(dir.path()).expect("canonical dir");
        let dotted = dir.path().join(".").join("new.db");
        assert_eq!(canonical_file(&dotted), Some(canonical.join("new.db")));
        std::fs::write(dir.path().join("new.db"), b"").expect("create");
        assert_eq!(canonical_file(&dotted), Some(canonical.join("new.db")));
        assert_eq!(canonical_file(&dir.path().join("missing").join("q.db")), None);
    }
}
