//! The SQLite backend of cairnq (being built: see the SQLite helper's work).
