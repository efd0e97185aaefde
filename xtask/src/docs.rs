//! `cargo xtask docs`: the book (mdBook, in `docs/`) built into
//! `target/book`, after two checks that need no network: every link between
//! the book's pages (and from the README into the book) lands on a file and
//! a heading that exist, and every chapter is included by one of the crates
//! that compile its Rust snippets as doc tests. `--test` then compiles and
//! runs those snippets (`cargo test --doc` of the including crates). The
//! book's shell transcripts (```` ```console ```` blocks) are run as written
//! by cairnq-cli's `book` test, with the tests.
//!
//! mdBook is a tool, not a dependency of the workspace: it is run as a
//! command, and a machine without it gets one line saying how to install it.
//!
//! The book's screenshots are taken by the tests (the dashboard in a real
//! browser, `cairnq top` in a pseudo-terminal) and copied in before each
//! build, so CI, which builds the book after the tests, regenerates them.

use std::io::ErrorKind;
use std::path::Path;
use std::process::Command;

mod links;

/// The crates whose doc tests include the book's chapters, and the file of
/// each that names them (a chapter missing from both is never compiled).
const SNIPPET_HOSTS: &[(&str, &str)] =
    &[("cairnq-bench", "cairnq-bench/src/book.rs"), ("cairnq-web", "cairnq-web/src/lib.rs")];

const USAGE: &str = "usage: cargo xtask docs [--test]";

/// Checks the links and the snippet hosts, builds the book, and with
/// `--test` runs the snippets.
pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), String> {
    let mut test = false;
    for arg in args {
        match arg.as_str() {
            "--test" => test = true,
            other => return Err(format!("docs: unknown argument {other:?} ({USAGE})")),
        }
    }
    let problems = [links::check(root)?, untested_chapters(root)?].concat();
    if !problems.is_empty() {
        return Err(format!("docs: {} problem(s):\n  {}", problems.len(), problems.join("\n  ")));
    }
    refresh_screenshots(root)?;
    build(root)?;
    if test {
        run_snippets(root)?;
    }
    Ok(())
}

/// The book's pictures the tests take (source in `target/`, destination in
/// `docs/src/images`): the dashboard's overview from the browser test, and
/// `cairnq top` as text from its terminal test.
const SCREENSHOTS: &[(&str, &str)] =
    &[("target/web-screenshots/overview.png", "overview.png"), ("target/tui-screenshots/top.txt", "top.txt")];

/// Takes the screenshots the last test run made into the book, so a build
/// after the tests (as CI runs them) shows the dashboard and `top` as they
/// are now. A picture no test made yet keeps its committed version.
fn refresh_screenshots(root: &Path) -> Result<(), String> {
    let images = root.join("docs").join("src").join("images");
    for (taken, name) in SCREENSHOTS {
        let fresh = root.join(taken);
        if fresh.exists() {
            std::fs::copy(&fresh, images.join(name)).map_err(|e| format!("cannot copy {taken} into the book: {e}"))?;
            eprintln!("xtask: the book's {name} is the one the tests took ({taken})");
        }
    }
    Ok(())
}

/// `mdbook build docs -d target/book`.
fn build(root: &Path) -> Result<(), String> {
    let dest = root.join("target").join("book");
    let status = Command::new("mdbook").arg("build").arg(root.join("docs")).arg("-d").arg(&dest).status();
    match status {
        Err(e) if e.kind() == ErrorKind::NotFound => {
            Err("mdbook is not installed: run `cargo install mdbook --locked`, then `cargo xtask docs` again"
                .to_string())
        }
        Err(e) => Err(format!("cannot run mdbook: {e}")),
        Ok(status) if status.success() => {
            eprintln!("xtask: the book is at {}", dest.join("index.html").display());
            Ok(())
        }
        Ok(status) => Err(format!("mdbook build failed ({status})")),
    }
}

/// Every chapter (a `.md` file of `docs/src` other than `SUMMARY.md`) is
/// named by a snippet host, so its Rust blocks are compiled.
fn untested_chapters(root: &Path) -> Result<Vec<String>, String> {
    let mut hosts = String::new();
    for (_, file) in SNIPPET_HOSTS {
        hosts += &std::fs::read_to_string(root.join(file)).map_err(|e| format!("cannot read {file}: {e}"))?;
    }
    let src = root.join("docs").join("src");
    let mut problems = Vec::new();
    for chapter in links::markdown_files(&src)? {
        let relative = chapter.strip_prefix(&src).unwrap_or(&chapter).to_string_lossy().replace('\\', "/");
        if relative != "SUMMARY.md" && !hosts.contains(&format!("\"{relative}\"")) && !hosts.contains(&relative) {
            let files: Vec<_> = SNIPPET_HOSTS.iter().map(|(_, f)| *f).collect();
            problems.push(format!(
                "docs/src/{relative}: no crate compiles its snippets (include it in {})",
                files.join(" or ")
            ));
        }
    }
    Ok(problems)
}

/// `cargo test --doc` of every snippet host.
fn run_snippets(root: &Path) -> Result<(), String> {
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(root).args(["test", "--doc"]);
    for (krate, _) in SNIPPET_HOSTS {
        cargo.args(["-p", krate]);
    }
    let status = cargo.status().map_err(|e| format!("cannot run cargo test --doc: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("the book's snippets failed ({status})")) }
}
