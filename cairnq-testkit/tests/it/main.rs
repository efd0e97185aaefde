//! The testkit's integration tests, in one binary: the built-in suite
//! against our SQLite backend, the interpreter's own rules on real stores,
//! the `cairnq-conformance` binary, and a deliberately broken store the
//! suite must catch.

mod binary;
mod broken_store;
mod interpreter;
mod repair;
