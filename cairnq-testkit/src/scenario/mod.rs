//! The interpreter of CONFORMANCE.md's language-neutral JSON scenarios, and
//! our own suite of them.
//!
//! A scenario file written for any cairnq SDK runs here unchanged: each
//! scenario gets a fresh store from a [`BackendFactory`], and its ops go
//! through [`cairnq_core::CairnQ`], so the client's validation is part of
//! what is tested. Our built-in scenarios (`scenarios/*.json` in this crate)
//! are embedded at build time, so [`run_all`] works from any copy of the
//! crate.
//!
//! ```no_run
//! # async fn demo(factory: &dyn cairnq_testkit::BackendFactory) {
//! let report = cairnq_testkit::scenario::run_all(factory).await;
//! for outcome in &report.outcomes {
//!     println!("{outcome}");
//! }
//! println!("{}", report.summary());
//! report.assert_all_passed();
//! # }
//! ```
//!
//! Where CONFORMANCE.md leaves room, this interpreter decides:
//! - unknown step keys, assertion names and op arguments are refused (a typo
//!   must not turn a check into one that cannot fail); a known argument of
//!   the wrong JSON type is refused input and surfaces as `ValidationError`;
//! - an `args` value of `null` means "absent" (the default applies);
//! - `notNull: []` / `isNull: []` check the target itself;
//! - assertion field names may be dotted paths (`error.code`) when the target
//!   has no key of that exact name;
//! - defaults not named by CONFORMANCE.md: `claim` queues `["default"]` and a
//!   fresh `worker_…` id, `queue_depth` queue `default`, `heartbeat*` lease
//!   30000 ms, `succeed`/`complete` result `null`.

mod args;
mod assertions;
mod builtin;
mod file;
mod ops;
mod refs;
mod report;
mod runner;

use std::path::{Path, PathBuf};

pub use file::{Scenario, Step};
pub use report::{Outcome, Report};

use crate::BackendFactory;

/// A scenario to run, or why its file could not be read.
struct Source {
    label: String,
    scenario: Result<Scenario, String>,
}

impl Source {
    fn from_file(path: &Path) -> Self {
        Self { label: path.display().to_string(), scenario: Scenario::load(path) }
    }

    async fn run(&self, factory: &dyn BackendFactory) -> Outcome {
        match &self.scenario {
            Ok(scenario) => runner::run_scenario(factory, scenario).await,
            Err(why) => Outcome::new(self.label.clone(), Some(why.clone())),
        }
    }
}

async fn run_sources(factory: &dyn BackendFactory, sources: &[Source]) -> Report {
    let mut report = Report::default();
    for source in sources {
        report.outcomes.push(source.run(factory).await);
    }
    report
}

/// Our built-in scenarios, parsed: (file name, scenario or parse error).
pub fn builtin_scenarios() -> Vec<(&'static str, Result<Scenario, String>)> {
    builtin::BUILTIN.iter().map(|(file, text)| (*file, Scenario::parse(text))).collect()
}

/// Runs every built-in scenario against fresh stores from `factory`.
pub async fn run_all(factory: &dyn BackendFactory) -> Report {
    let sources: Vec<Source> =
        builtin_scenarios().into_iter().map(|(file, scenario)| Source { label: file.to_string(), scenario }).collect();
    run_sources(factory, &sources).await
}

/// Runs the built-in suite and panics listing every failure: the one call a
/// backend's `#[tokio::test]` needs.
///
/// ```no_run
/// # struct MyFactory;
/// # #[async_trait::async_trait]
/// # impl cairnq_testkit::BackendFactory for MyFactory {
/// #     fn name(&self) -> &str { "mine" }
/// #     async fn fresh(&self) -> cairnq_core::Result<cairnq_testkit::FreshStore> { unimplemented!() }
/// # }
/// #[tokio::test]
/// async fn conformance() {
///     cairnq_testkit::scenario::assert_conformance(&MyFactory).await;
/// }
/// ```
pub async fn assert_conformance(factory: &dyn BackendFactory) {
    run_all(factory).await.assert_all_passed();
}

/// Runs scenarios built in code (or parsed with [`Scenario::parse`]).
pub async fn run_scenarios(factory: &dyn BackendFactory, scenarios: &[Scenario]) -> Report {
    let sources: Vec<Source> = scenarios
        .iter()
        .map(|scenario| Source { label: scenario.name.clone(), scenario: Ok(scenario.clone()) })
        .collect();
    run_sources(factory, &sources).await
}

/// Runs one scenario file.
pub async fn run_file(factory: &dyn BackendFactory, path: impl AsRef<Path>) -> Report {
    run_sources(factory, &[Source::from_file(path.as_ref())]).await
}

/// Runs every `*.json` file under `dir` (recursively, in path order).
pub async fn run_dir(factory: &dyn BackendFactory, dir: impl AsRef<Path>) -> Report {
    run_paths(factory, &[dir.as_ref().to_path_buf()]).await
}

/// Runs scenario files and directories of them, in the order given.
pub async fn run_paths(factory: &dyn BackendFactory, paths: &[PathBuf]) -> Report {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            files.extend(json_files(path));
        } else {
            files.push(Ok(path.clone()));
        }
    }
    let sources: Vec<Source> = files
        .into_iter()
        .map(|file| file.map_or_else(|(label, why)| Source { label, scenario: Err(why) }, |f| Source::from_file(&f)))
        .collect();
    run_sources(factory, &sources).await
}

/// Scenario files under `dir`, sorted; an unreadable directory is an entry
/// of its own so it shows up as a failure.
fn json_files(dir: &Path) -> Vec<Result<PathBuf, (String, String)>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => return vec![Err((dir.display().to_string(), format!("cannot read directory: {e}")))],
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            files.extend(json_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "json") {
            files.push(Ok(path));
        }
    }
    files
}
