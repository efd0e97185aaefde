//! Import circles between sibling modules of a crate, at any depth: `a`
//! uses `crate::b::...` while `b` (or something `b` uses) uses
//! `crate::a::...`, or, one level down, `bench::scale` uses `super::web`
//! while `bench::web` uses `super::scale`. A circle means neither module
//! can be read, changed or tested without the other; the modules of a crate
//! should point one way, as the crates themselves do. A module using its
//! parent (`super::`) or its own children is how Rust nests, not a circle.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module's path below the crate root, e.g. `["bench", "scale"]`.
type ModulePath = Vec<String>;

/// Every import circle among sibling modules under `src`, one problem
/// line each.
pub(super) fn circles(crate_name: &str, src: &Path) -> Vec<String> {
    let edges = sibling_imports(src);
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

/// Which sibling module each module imports: an import from module `p`
/// of module `t` is an edge between the two children of their deepest
/// common ancestor that lead to them (none when one contains the other).
fn sibling_imports(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<(ModulePath, std::path::PathBuf)> =
        super::rust_files(src).into_iter().filter_map(|file| Some((module_of(src, &file)?, file))).collect();
    let known: BTreeSet<ModulePath> = files.iter().map(|(module, _)| module.clone()).collect();
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, file) in &files {
        let text = fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            for target in imported_paths(module, line) {
                let target = longest_known(&target, &known);
                let common = module.iter().zip(&target).take_while(|(a, b)| a == b).count();
                if common < module.len() && common < target.len() {
                    let from = module[..=common].join("::");
                    edges.entry(from).or_default().insert(target[..=common].join("::"));
                }
            }
        }
    }
    edges
}

/// The module a file holds (`[]` for the crate root; `None` for a binary
/// target, which no module can import).
fn module_of(src: &Path, file: &Path) -> Option<ModulePath> {
    let relative = file.strip_prefix(src).ok()?;
    let mut parts: ModulePath = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if parts.first().is_some_and(|p| p == "bin") {
        return None;
    }
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    Some(parts)
}

/// The module paths a line names through `crate::`, `super::` or `self::`,
/// resolved against the module the line is in.
fn imported_paths(module: &[String], line: &str) -> Vec<ModulePath> {
    let mut found = Vec::new();
    for (at, _) in
        line.match_indices("crate::").chain(line.match_indices("super::")).chain(line.match_indices("self::"))
    {
        let before = line[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '$') {
            continue;
        }
        let mut base: ModulePath = if line[at..].starts_with("crate::") { Vec::new() } else { module.to_vec() };
        let mut rest = &line[at..];
        rest = rest.strip_prefix("crate::").or_else(|| rest.strip_prefix("self::")).unwrap_or(rest);
        while let Some(after) = rest.strip_prefix("super::") {
            base.pop();
            rest = after;
        }
        base.extend(segments(rest));
        found.push(base);
    }
    found
}

/// The leading `name::` segments of a path (lowercase names followed by
/// `::`: modules, as items are capitalised or end the path).
fn segments(mut path: &str) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let name: String =
            path.chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
        match path[name.len()..].strip_prefix("::") {
            Some(rest) if !name.is_empty() => {
                out.push(name);
                path = rest;
            }
            _ => return out,
        }
    }
}

/// The longest prefix of `path` that is a module with a file of its own.
fn longest_known(path: &[String], known: &BTreeSet<ModulePath>) -> ModulePath {
    (0..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| known.contains(p)).unwrap_or_default()
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

    #[test]
    fn a_circle_between_nested_siblings_is_found_and_parent_child_use_is_not() {
        let dir = std::env::temp_dir().join(format!("tidy-nested-{}", std::process::id()));
        fs::create_dir_all(dir.join("bench")).expect("temp dir");
        fs::write(dir.join("bench/mod.rs"), "//! b\nmod scale;\nmod web;\npub use scale::run;\n").expect("write");
        fs::write(dir.join("bench/scale.rs"), "//! s\nuse super::web::serve;\nuse super::Sizes;\n").expect("write");
        fs::write(dir.join("bench/web.rs"), "//! w\nuse crate::bench::scale::Step;\n").expect("write");
        let found = circles("demo", &dir);
        fs::write(dir.join("bench/web.rs"), "//! w\nuse super::Sizes;\n").expect("write");
        let none = circles("demo", &dir);
        fs::remove_dir_all(&dir).ok();
        assert_eq!(found, ["demo: import circle bench::scale -> bench::web -> bench::scale"]);
        assert!(none.is_empty(), "{none:?}");
    }
}
