//! Embeds every scenario file of `scenarios/` into the library, so the
//! built-in suite runs from any copy of the crate (a crates.io download
//! included) without locating files at run time, and a new scenario file is
//! picked up without editing a list by hand.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let dir = manifest.join("scenarios");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files = scenario_files(&dir);
    files.sort();
    let mut code = String::from(
        "/// Every built-in scenario: (file name, file text).\npub(crate) const BUILTIN: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        let name = file.file_name().and_then(|n| n.to_str()).expect("scenario file names are UTF-8");
        writeln!(code, "    ({name:?}, include_str!({:?})),", file.display().to_string()).expect("writing to a String");
    }
    code.push_str("];\n");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("builtin_scenarios.rs");
    fs::write(out, code).expect("OUT_DIR is writable");
}

fn scenario_files(dir: &Path) -> Vec<PathBuf> {
    let entries = fs::read_dir(dir).expect("the scenarios directory exists");
    entries
        .map(|entry| entry.expect("the scenarios directory is readable").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect()
}
