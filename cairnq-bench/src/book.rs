//! The book's chapters (`docs/src`, built by `cargo xtask docs`), included
//! as doc tests so every Rust snippet in them is compiled, and run unless
//! marked `no_run`, by `cargo test --doc -p cairnq-bench`. This crate hosts
//! them because it already depends on every crate a chapter uses (both
//! backends, the worker, the testkit, the Prometheus exporter) and is not
//! published, so reaching outside its directory costs no packaging. The
//! dashboard's page needs axum and is included by cairnq-web instead.

/// One hidden item per chapter, its doc the chapter's Markdown.
macro_rules! chapters {
    ($($name:ident => $path:literal),* $(,)?) => {
        $(
            #[doc = include_str!(concat!("../../docs/src/", $path))]
            pub struct $name;
        )*
    };
}

chapters! {
    Introduction => "introduction.md",
    GettingStarted => "getting-started.md",
    Concepts => "concepts.md",
    TheWorker => "worker.md",
    Operating => "operating/index.md",
    TheCommand => "operating/cli.md",
    Observability => "operating/observability.md",
    Maintenance => "operating/maintenance.md",
    Upgrading => "operating/upgrading.md",
    Schedules => "schedules.md",
    FlowControl => "flow-control.md",
    DurableSteps => "steps.md",
    TaskDependencies => "dependencies.md",
    SqliteVsPostgres => "sqlite-vs-postgres.md",
    CrossLanguage => "cross-language.md",
    WritingABackend => "writing-a-backend.md",
    Performance => "performance.md",
    Reference => "reference.md",
}
