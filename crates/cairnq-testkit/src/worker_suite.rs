//! Worker-level shared tests (being built by the worker helper).
