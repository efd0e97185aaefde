//! The book's link check, offline: every relative link of a page of
//! `docs/src` (and of the root's README, PARITY, ARCHITECTURE and
//! BENCHMARKS, which link into it) must name a file that exists and, with a
//! `#fragment`, a heading of that page, spelled as mdBook and GitHub make
//! heading ids. A page of the book may not link outside `docs/src`: the
//! built book would not have the file. Links inside code are not links.

use std::collections::HashMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// The root's pages whose links are checked with the book's.
const ROOT_PAGES: &[&str] = &["README.md", "PARITY.md", "ARCHITECTURE.md", "BENCHMARKS.md"];

/// Every broken link, as `file: (target) why`.
pub(crate) fn check(root: &Path) -> Result<Vec<String>, String> {
    let src = root.join("docs").join("src");
    let mut pages = markdown_files(&src)?;
    pages.extend(ROOT_PAGES.iter().map(|page| root.join(page)));
    let mut headings: HashMap<PathBuf, Vec<String>> = HashMap::new();
    let mut problems = Vec::new();
    for page in &pages {
        let text = read(page)?;
        let shown = page.strip_prefix(root).unwrap_or(page).display().to_string();
        for target in link_targets(&text) {
            if let Some(why) = broken(root, &src, page, &target, &mut headings)? {
                problems.push(format!("{shown}: ({target}) {why}"));
            }
        }
    }
    Ok(problems)
}

/// Why `target`, linked from `page`, is broken; `None` when it is fine.
fn broken(
    root: &Path,
    src: &Path,
    page: &Path,
    target: &str,
    headings: &mut HashMap<PathBuf, Vec<String>>,
) -> Result<Option<String>, String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return Ok(None);
    }
    let (path, fragment) = match target.split_once('#') {
        Some((path, fragment)) => (path, Some(fragment)),
        None => (target, None),
    };
    let file = if path.is_empty() { page.to_path_buf() } else { normalize(&page.parent().unwrap_or(root).join(path)) };
    if page.starts_with(src) && !file.starts_with(src) {
        return Ok(Some("leaves docs/src: the built book will not have it".to_string()));
    }
    if !file.exists() {
        return Ok(Some("no such file".to_string()));
    }
    let (Some(fragment), Some("md")) = (fragment, file.extension().and_then(|e| e.to_str())) else {
        return Ok(None);
    };
    if !headings.contains_key(&file) {
        headings.insert(file.clone(), heading_ids(&read(&file)?));
    }
    let known = headings.get(&file).is_some_and(|ids| ids.iter().any(|id| id == fragment));
    Ok((!known).then(|| format!("no heading with id {fragment:?}")))
}

/// The Markdown files under `dir`, sorted.
pub(crate) fn markdown_files(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let entries = fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    for entry in entries {
        let path = entry.map_err(|e| format!("cannot read {}: {e}", dir.display()))?.path();
        if path.is_dir() {
            found.extend(markdown_files(&path)?);
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

/// `a/b/../c` as `a/c`, without touching the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The lines of `text` outside fenced code blocks.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The targets of the inline links and images of `text` (`[x](target)`),
/// outside code blocks and code spans.
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(text) {
        let prose: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let end = after.find(')').unwrap_or(after.len());
            let target = after[..end].split_whitespace().next().unwrap_or("");
            if !target.is_empty() {
                targets.push(target.to_string());
            }
            rest = &after[end..];
        }
    }
    targets
}

/// The ids mdBook (and GitHub) give the headings of `text`: lowercase
/// letters, digits, `-` and `_` kept, whitespace as `-`, the rest dropped;
/// a repeated id gets `-1`, `-2`, ...
fn heading_ids(text: &str) -> Vec<String> {
    let mut ids = Vec::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for line in prose_lines(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        let Some(title) = line.get(hashes..).and_then(|t| t.strip_prefix(' ')) else { continue };
        if hashes == 0 || hashes > 6 {
            continue;
        }
        let base: String = title
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let repeats = seen.entry(base.clone()).or_default();
        ids.push(if *repeats == 0 { base } else { format!("{base}-{repeats}") });
        *repeats += 1;
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heading_ids_follow_mdbook() {
        let ids = heading_ids(
            "# The `cairnq` command\n## Workers: `worker --exec`\n```\n# not a heading\n```\n## Tasks\n## Tasks and more\n## Tasks\n",
        );
        assert_eq!(ids, ["the-cairnq-command", "workers-worker---exec", "tasks", "tasks-and-more", "tasks-1"]);
    }

    #[test]
    fn links_in_code_are_not_links() {
        let text = "see [a](a.md#x) and `[b](b.md)`\n```\n[c](c.md)\n```\n![img](i.png)";
        assert_eq!(link_targets(text), ["a.md#x", "i.png"]);
    }
}
