//! PARITY.md stays complete: every public member of the installed Python
//! SDK (its exports; the methods, properties and fields of CairnQ, Worker,
//! TaskContext and Task; each error's constructor parameters, attributes,
//! methods and properties) has a row in the section of its kind, with a
//! Rust counterpart or a reason.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::support::peer;

#[test]
fn parity_md_names_every_public_member_of_the_python_sdk() {
    let surface = peer(&["surface", "-"]);
    let sections = surface.as_object().expect("the peer prints sections");
    let table = documented(&std::fs::read_to_string(parity_md()).expect("PARITY.md at the workspace root"));
    let mut missing = Vec::new();
    for (section, names) in sections {
        let rows = table.get(section.as_str());
        for name in names.as_array().expect("a list of names").iter().filter_map(|n| n.as_str()) {
            if !rows.is_some_and(|rows| rows.contains(name)) {
                missing.push(format!("{section}: {name}"));
            }
        }
    }
    assert!(missing.is_empty(), "PARITY.md has no row for these Python members:\n{}", missing.join("\n"));
}

#[test]
fn every_parity_row_says_what_rust_has() {
    let text = std::fs::read_to_string(parity_md()).expect("PARITY.md");
    let empty: Vec<_> =
        table_rows(&text).filter(|(_, cells)| cells.get(1).is_none_or(|rust| rust.is_empty())).collect();
    assert!(empty.is_empty(), "rows without a Rust counterpart or a reason: {empty:?}");
}

fn parity_md() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../PARITY.md")
}

/// The first-column names of each `## Section`'s table.
fn documented(text: &str) -> BTreeMap<String, BTreeSet<String>> {
    let mut sections: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (section, cells) in table_rows(text) {
        if let Some(name) = cells.first() {
            sections.entry(section).or_default().insert(name.trim_matches('`').to_string());
        }
    }
    sections
}

/// Every table body row with the section it sits under, split into trimmed
/// cells (header and separator rows left out).
fn table_rows(text: &str) -> impl Iterator<Item = (String, Vec<String>)> + '_ {
    let mut section = String::new();
    text.lines().filter_map(move |line| {
        if let Some(title) = line.strip_prefix("## ") {
            section = title.trim().to_string();
            return None;
        }
        let row = line.strip_prefix('|')?.strip_suffix('|')?;
        let cells: Vec<String> = row.split('|').map(|c| c.trim().to_string()).collect();
        let header = cells.first().is_some_and(|c| c == "Python" || c.starts_with("---"));
        (!header).then(|| (section.clone(), cells))
    })
}
