//! Import circles between the top-level modules of a crate: `a` uses
//! `crate::b::...` while `b` (or something `b` uses) uses `crate::a::...`.
//! A circle means neither module can be read, changed or tested without
//! the other; the layers of the crate should point one way, as the crates
//! themselves do.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// Every import circle among the top-level modules under `src`, one
/// problem line each.
pub(super) fn circles(crate_name: &str, src: &Path) -> Vec<String> {
    let edges = module_imports(src);
    let mut reported = BTreeSet::new();
    let mut problems = Vec::new();
    for start in edges.keys() {
        for circle in circles_from(start, &edges) {
            let members: BTreeSet<&str> = circle.iter().map(String::as_str).collect();
            if reported.insert(members.iter().map(|m| m.to_string()).collect::<Vec<_>>()) {
                problems.push(format!("{crate_name}: import circle {}", circle.join(" -> ")));
            }
        }
    }
    problems
}

/// Which top-level modules each top-level module imports (`crate::x::`).
fn module_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in super::rust_files(src) {
        let Some(module) = top_module(src, &file) else { continue };
        let text = fs::read_to_string(&file).unwrap_or_default();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for target in line.split("crate::").skip(1).filter_map(module_name) {
                if target != module {
                    edges.entry(module.clone()).or_default().insert(target);
                }
            }
        }
    }
    edges
}

/// The top-level module a file belongs to (`None` for the crate root).
fn top_module(src: &Path, file: &Path) -> Option<String> {
    let first = file.strip_prefix(src).ok()?.components().next()?;
    let name = first.as_os_str().to_string_lossy();
    let name = name.strip_suffix(".rs").unwrap_or(&name).to_string();
    (!matches!(name.as_str(), "lib" | "main" | "bin")).then_some(name)
}

/// `x` of `x::rest`, when the text after `crate::` names a module path.
fn module_name(after: &str) -> Option<String> {
    let name: String =
        after.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
    (!name.is_empty() && after[name.len()..].starts_with("::")).then_some(name)
}

/// Circles through `start`: each a path start -> ... -> start.
fn circles_from(start: &str, edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let mut stack = vec![(start.to_string(), vec![start.to_string()])];
    let mut visited = BTreeSet::new();
    while let Some((at, path)) = stack.pop() {
        for next in edges.get(&at).into_iter().flatten() {
            if next == start {
                found.push([path.clone(), vec![start.to_string()]].concat());
            } else if visited.insert(next.clone()) {
                stack.push((next.clone(), [path.clone(), vec![next.clone()]].concat()));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_circle_between_two_modules_is_found_and_a_chain_is_not() {
        let dir = std::env::temp_dir().join(format!("tidy-imports-{}", std::process::id()));
        fs::create_dir_all(dir.join("b")).expect("temp dir");
        fs::write(dir.join("a.rs"), "//! a\nuse crate::b::x;\n// crate::c::y in a comment\n").expect("write");
        fs::write(dir.join("b/mod.rs"), "//! b\nuse crate::c::Thing;\n").expect("write");
        fs::write(dir.join("c.rs"), "//! c\npub fn f() { crate::a::g(); }\n").expect("write");
        let found = circles("demo", &dir);
        fs::write(dir.join("c.rs"), "//! c\npub fn f() {}\n").expect("write");
        let none = circles("demo", &dir);
        fs::remove_dir_all(&dir).ok();
        assert_eq!(found, ["demo: import circle a -> b -> c -> a"]);
        assert!(none.is_empty(), "{none:?}");
    }
}
