//! Tidy: the project's code invariants, checked by a test rather than by
//! review (River's depguard, rust-analyzer's tidy).
//!
//! - Layers point down only: each crate may depend on the internal crates its
//!   rule lists, and nothing else; a new crate fails until it gets a rule.
//! - cairnq-core, cairnq-protocol, cairnq-sql and cairnq-worker never name a database
//!   driver, and no backend names another backend.
//! - Every Rust file opens with a `//!` doc saying why it exists.
//! - ARCHITECTURE.md has a section for every crate.
//! - No Rust source file is longer than 500 lines.
//! - No two top-level modules of a crate import each other, directly or
//!   round a circle (see [`imports`]).

use std::fs;
use std::path::{Path, PathBuf};

mod imports;

/// The internal crates one crate may depend on.
struct Layer {
    name: &'static str,
    normal: &'static [&'static str],
    optional: &'static [&'static str],
    dev: &'static [&'static str],
}

const BACKEND_CRATES: &[&str] = &["cairnq-sqlite", "cairnq-postgres"];

const LAYERS: &[Layer] = &[
    Layer { name: "cairnq-protocol", normal: &[], optional: &[], dev: &[] },
    // Core knows no SQL: the statements are cairnq-sql's and the backends'.
    Layer { name: "cairnq-core", normal: &[], optional: &[], dev: &[] },
    Layer { name: "cairnq-sql", normal: &["cairnq-core", "cairnq-protocol"], optional: &[], dev: &[] },
    Layer {
        name: "cairnq-sqlite",
        normal: &["cairnq-core", "cairnq-sql", "cairnq-protocol"],
        optional: &[],
        dev: &["cairnq-testkit", "cairnq-worker"],
    },
    Layer {
        name: "cairnq-postgres",
        normal: &["cairnq-core", "cairnq-sql", "cairnq-protocol"],
        optional: &[],
        dev: &["cairnq-testkit", "cairnq-worker"],
    },
    Layer {
        name: "cairnq-worker",
        normal: &["cairnq-core"],
        optional: &[],
        dev: &["cairnq-testkit", "cairnq-sqlite", "cairnq-postgres"],
    },
    Layer {
        name: "cairnq-cli",
        normal: &["cairnq-core", "cairnq-protocol", "cairnq-sqlite", "cairnq-postgres", "cairnq-worker", "cairnq-web"],
        optional: &[],
        dev: &["cairnq-testkit"],
    },
    Layer { name: "cairnq-memory", normal: &["cairnq-core"], optional: &[], dev: &[] },
    Layer {
        name: "cairnq-testkit",
        normal: &["cairnq-core", "cairnq-sql", "cairnq-protocol", "cairnq-worker", "cairnq-memory"],
        optional: &["cairnq-protocol", "cairnq-sqlite", "cairnq-postgres"],
        dev: &["cairnq-testkit", "cairnq-sqlite", "cairnq-postgres", "cairnq-worker"],
    },
    Layer {
        name: "cairnq-bench",
        normal: &[
            "cairnq-protocol",
            "cairnq-core",
            "cairnq-sql",
            "cairnq-worker",
            "cairnq-testkit",
            "cairnq-sqlite",
            "cairnq-postgres",
            "cairnq-web",
        ],
        optional: &[],
        dev: &[],
    },
    Layer {
        name: "cairnq-web",
        normal: &["cairnq-core"],
        optional: BACKEND_CRATES,
        dev: &["cairnq-testkit", "cairnq-sqlite", "cairnq-postgres"],
    },
    Layer { name: "xtask", normal: &[], optional: &[], dev: &[] },
];

/// Driver crates and who must never name them in source.
const DRIVER_NAMES: &[&str] = &["rusqlite", "tokio_postgres", "deadpool_postgres"];
const DRIVER_FREE: &[&str] = &["cairnq-protocol", "cairnq-core", "cairnq-sql", "cairnq-worker"];
const BACKENDS: &[(&str, &str)] = &[("cairnq-sqlite", "cairnq_sqlite"), ("cairnq-postgres", "cairnq_postgres")];

/// Runs every check and reports all violations at once.
pub(crate) fn run(root: &Path) -> Result<(), String> {
    let mut problems = Vec::new();
    let crates = member_dirs(root);
    let architecture = fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap_or_default();
    for dir in &crates {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        check_dependencies(&name, dir, &mut problems);
        check_sources(&name, dir, &mut problems);
        problems.extend(imports::circles(&name, &dir.join("src")));
        // A whole heading line: `### cairnq-sqlite` is no section for cairnq-sql.
        let heading = format!("### {name}");
        if name != "xtask" && !architecture.lines().any(|line| line.trim_end() == heading) {
            problems.push(format!("ARCHITECTURE.md has no `### {name}` section"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("tidy found {} problem(s):\n  {}", problems.len(), problems.join("\n  ")))
    }
}

/// The workspace members, as the root manifest lists them.
pub(crate) fn member_dirs(root: &Path) -> Vec<PathBuf> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).unwrap_or_default();
    workspace_members(&manifest).into_iter().map(|member| root.join(member)).collect()
}

/// The entries of `[workspace] members = [...]` (one quoted path each,
/// on any number of lines).
fn workspace_members(manifest: &str) -> Vec<String> {
    let Some(start) = manifest.find("\nmembers") else { return Vec::new() };
    let list = &manifest[start..];
    let (Some(open), Some(close)) = (list.find('['), list.find(']')) else { return Vec::new() };
    list[open + 1..close]
        .lines()
        .map(|line| line.split('#').next().unwrap_or(""))
        .flat_map(|line| line.split(','))
        .map(|item| item.trim().trim_matches('"').to_string())
        .filter(|item| !item.is_empty())
        .collect()
}

/// One internal dependency found in a manifest.
struct InternalDep {
    name: String,
    section: String,
    optional: bool,
}

fn internal_deps(manifest: &str) -> Vec<InternalDep> {
    let mut section = String::new();
    let mut deps = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            continue;
        }
        let key = line.split(['=', '.', ' ']).next().unwrap_or("");
        if key.starts_with("cairnq-") && section.ends_with("dependencies") {
            deps.push(InternalDep {
                name: key.to_string(),
                section: section.clone(),
                optional: line.contains("optional = true"),
            });
        }
    }
    deps
}

fn check_dependencies(name: &str, dir: &Path, problems: &mut Vec<String>) {
    let Some(&Layer { normal, optional, dev, .. }) = LAYERS.iter().find(|l| l.name == name) else {
        problems
            .push(format!("{name}: no layering rule in xtask/src/tidy.rs (add one and an ARCHITECTURE.md section)"));
        return;
    };
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    for dep in internal_deps(&manifest) {
        let allowed = match dep.section.as_str() {
            "dependencies" if dep.optional => {
                normal.contains(&dep.name.as_str()) || optional.contains(&dep.name.as_str())
            }
            "dependencies" | "build-dependencies" => normal.contains(&dep.name.as_str()),
            "dev-dependencies" => dev.contains(&dep.name.as_str()) || normal.contains(&dep.name.as_str()),
            _ => false,
        };
        if !allowed {
            let kind = if dep.optional { "optional " } else { "" };
            problems.push(format!("{name}: {kind}[{}] on {} breaks the layering", dep.section, dep.name));
        }
    }
}

/// The longest a source file may be: one a reader takes in at one sitting.
const MAX_FILE_LINES: usize = 500;

fn check_sources(name: &str, dir: &Path, problems: &mut Vec<String>) {
    for file in rust_files(dir) {
        let text = fs::read_to_string(&file).unwrap_or_default();
        let shown = file.strip_prefix(dir.parent().unwrap_or(dir)).unwrap_or(&file).display().to_string();
        if !text.trim_start().starts_with("//!") {
            problems.push(format!("{shown}: does not open with a `//!` module doc"));
        }
        let lines = text.lines().count();
        if lines > MAX_FILE_LINES {
            problems.push(format!("{shown}: {lines} lines, over {MAX_FILE_LINES}: split it along a seam"));
        }
        let in_src = file.components().any(|c| c.as_os_str() == "src");
        if !in_src {
            continue;
        }
        if DRIVER_FREE.contains(&name) {
            for driver in DRIVER_NAMES.iter().filter(|d| names_crate(&text, d)) {
                problems.push(format!("{shown}: {name} must not name the driver `{driver}`"));
            }
        }
        for (backend, ident) in BACKENDS {
            let is_backend = BACKENDS.iter().any(|(b, _)| *b == name);
            if is_backend && *backend != name && names_crate(&text, ident) {
                problems.push(format!("{shown}: backend {name} must not know {backend}"));
            }
        }
    }
}

fn names_crate(text: &str, ident: &str) -> bool {
    text.lines().filter(|l| !l.trim_start().starts_with("//")).any(|l| l.contains(&format!("{ident}::")))
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for path in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            let skip = path.file_name().is_some_and(|n| n == "target" || n.to_string_lossy().starts_with('.'));
            if path.is_dir() && !skip {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    //! The tidy checks run with `cargo test`, so CI enforces them.

    use super::*;

    #[test]
    fn workspace_is_tidy() {
        if let Err(problems) = run(&crate::project_root()) {
            panic!("{problems}");
        }
    }

    #[test]
    fn an_upward_dependency_is_reported() {
        let manifest = "[package]\nname = \"x\"\n[dependencies]\ncairnq-worker.workspace = true\n";
        let deps = internal_deps(manifest);
        assert_eq!(deps.len(), 1);
        let dir = std::env::temp_dir().join(format!("tidy-{}", std::process::id()));
        fs::create_dir_all(&dir).expect("temp dir");
        fs::write(dir.join("Cargo.toml"), manifest).expect("write manifest");
        let mut problems = Vec::new();
        check_dependencies("cairnq-core", &dir, &mut problems);
        fs::remove_dir_all(&dir).ok();
        assert_eq!(problems, vec!["cairnq-core: [dependencies] on cairnq-worker breaks the layering".to_string()]);
    }

    #[test]
    fn members_are_read_from_the_root_manifest() {
        let manifest = "[workspace]\nmembers = [\n    \"a\", # first\n    \"b\",\n]\n[workspace.package]\n";
        assert_eq!(workspace_members(manifest), ["a", "b"]);
        let members = member_dirs(&crate::project_root());
        assert!(members.iter().all(|dir| dir.join("Cargo.toml").is_file()), "{members:?}");
        assert!(members.iter().any(|dir| dir.ends_with("cairnq-core")));
    }

    #[test]
    fn a_backend_naming_another_is_reported() {
        assert!(names_crate("use cairnq_postgres::PostgresStore;", "cairnq_postgres"));
        assert!(!names_crate("// cairnq_postgres::x is only mentioned", "cairnq_postgres"));
    }
}
