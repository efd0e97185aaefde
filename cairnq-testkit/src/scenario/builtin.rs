//! Our built-in scenario files, embedded by `build.rs` from `scenarios/`.

include!(concat!(env!("OUT_DIR"), "/builtin_scenarios.rs"));
