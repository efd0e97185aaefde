//! What a suite run found: one outcome per scenario, printable the way the
//! `cairnq-conformance` binary prints it.

use std::fmt;

/// How one scenario ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The scenario's name (or the file's path when it could not be read).
    pub name: String,
    /// Why it failed — the step index and op, the assertion, the actual
    /// value — or `None` when it passed.
    pub failure: Option<String>,
}

impl Outcome {
    pub(crate) fn new(name: String, failure: Option<String>) -> Self {
        Self { name, failure }
    }

    /// Whether the scenario passed.
    pub fn passed(&self) -> bool {
        self.failure.is_none()
    }
}

impl fmt::Display for Outcome {
    /// `PASS name` or `FAIL name: why`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            None => write!(f, "PASS {}", self.name),
            Some(why) => write!(f, "FAIL {}: {why}", self.name),
        }
    }
}

/// Every outcome of one run, in the order the scenarios ran.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// One per scenario.
    pub outcomes: Vec<Outcome>,
}

impl Report {
    /// How many scenarios passed.
    pub fn passed(&self) -> usize {
        self.outcomes.iter().filter(|o| o.passed()).count()
    }

    /// How many scenarios failed.
    pub fn failed(&self) -> usize {
        self.outcomes.len() - self.passed()
    }

    /// The failed outcomes.
    pub fn failures(&self) -> impl Iterator<Item = &Outcome> {
        self.outcomes.iter().filter(|o| !o.passed())
    }

    /// `N passed, M failed`.
    pub fn summary(&self) -> String {
        format!("{} passed, {} failed", self.passed(), self.failed())
    }

    /// Panics listing every failure (for `#[tokio::test]`); also panics
    /// when nothing ran, since an empty run proves nothing.
    pub fn assert_all_passed(&self) {
        assert!(!self.outcomes.is_empty(), "no scenario ran");
        let failures: Vec<String> = self.failures().map(Outcome::to_string).collect();
        assert!(failures.is_empty(), "{}\n{}", failures.join("\n"), self.summary());
    }
}

impl Extend<Outcome> for Report {
    fn extend<I: IntoIterator<Item = Outcome>>(&mut self, outcomes: I) {
        self.outcomes.extend(outcomes);
    }
}
