//! `cargo xtask package`: proves the published crates are complete. Every
//! crate not marked `publish = false` is packaged and its packaged source
//! built (`cargo package --workspace`, which resolves our unpublished
//! crates through a local registry), so a file a build needs but the
//! package leaves out (SQL, migrations, scenarios, assets) fails here, not
//! for the first user of crates.io. Then the CLI is installed from its
//! packaged crate into a temporary directory, its internal dependencies
//! taken from their packaged sources too, and the installed `cairnq` must
//! answer `--help`.
//!
//! Dev-dependencies between our crates name a path and no version, so
//! cargo drops them from the packages (they would form cycles between
//! crates that test each other, and tests are not published).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::tidy::member_dirs;

/// Where `cargo package` leaves the unpacked sources it verified.
const PACKAGE_DIR: &str = "target/package";

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), String> {
    if let Some(other) = args.first() {
        return Err(format!("package: unknown argument {other:?} (usage: cargo xtask package)"));
    }
    let unpublished = unpublished_crates(root);
    let published = published_crates(root, &unpublished);
    forget_earlier_packages(&published, &workspace_version(root)?)?;
    package(root, &unpublished)?;
    install_cli(root, &published)
}

/// The member directory names whose manifest says `publish = false`.
fn unpublished_crates(root: &Path) -> Vec<String> {
    member_dirs(root).into_iter().filter(|dir| !is_published(dir)).filter_map(|dir| dir_name(&dir)).collect()
}

fn published_crates(root: &Path, unpublished: &[String]) -> Vec<String> {
    member_dirs(root).iter().filter_map(|dir| dir_name(dir)).filter(|name| !unpublished.contains(name)).collect()
}

fn is_published(dir: &Path) -> bool {
    let manifest = fs::read_to_string(dir.join("Cargo.toml")).unwrap_or_default();
    !manifest.lines().any(|line| line.replace(' ', "") == "publish=false")
}

fn dir_name(dir: &Path) -> Option<String> {
    dir.file_name().and_then(|name| name.to_str()).map(str::to_string)
}

/// The target directory of the packages' verification builds: their own,
/// because cargo takes a crate from a registry as never changing and would
/// reuse an earlier run's build of our crates at the same version.
const VERIFY_TARGET: &str = "target/package-verify";

fn package(root: &Path, unpublished: &[String]) -> Result<(), String> {
    forget_earlier_builds(&root.join(VERIFY_TARGET))?;
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(root).args(["package", "--workspace", "--locked", "--allow-dirty"]);
    cargo.env("CARGO_TARGET_DIR", root.join(VERIFY_TARGET));
    for name in unpublished {
        cargo.args(["--exclude", name]);
    }
    run_to_success(&mut cargo, "cargo package")
}

/// Removes the sources cargo unpacked from an earlier run's packages.
/// `cargo package` verifies through a local registry, and cargo unpacks
/// each crate of it under `$CARGO_HOME/registry/src/<registry>/` by name and
/// version only: a second run at the same version would build the first
/// run's sources. crates.io's own directories are left alone.
fn forget_earlier_packages(published: &[String], version: &str) -> Result<(), String> {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cargo")));
    let Some(sources) = home.map(|home| home.join("registry").join("src")) else { return Ok(()) };
    let Ok(registries) = fs::read_dir(&sources) else { return Ok(()) };
    for registry in registries.flatten() {
        if registry.file_name().to_string_lossy().starts_with("index.") {
            continue;
        }
        for name in published {
            let unpacked = registry.path().join(format!("{name}-{version}"));
            if unpacked.exists() {
                fs::remove_dir_all(&unpacked).map_err(|e| format!("cannot remove {}: {e}", unpacked.display()))?;
            }
        }
    }
    Ok(())
}

/// Removes the verification builds' fingerprints of our crates (the
/// dependencies from crates.io stay built), so each run builds the
/// packaged sources it just made.
fn forget_earlier_builds(target: &Path) -> Result<(), String> {
    for profile in ["debug", "release"] {
        let Ok(entries) = fs::read_dir(target.join(profile).join(".fingerprint")) else { continue };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("cairnq-") {
                fs::remove_dir_all(entry.path())
                    .map_err(|e| format!("cannot remove {}: {e}", entry.path().display()))?;
            }
        }
    }
    Ok(())
}

/// `cargo install` of the packaged CLI, every internal crate patched to its
/// packaged source, into a temporary root; then `cairnq --help` from there.
fn install_cli(root: &Path, published: &[String]) -> Result<(), String> {
    let packages = root.join(PACKAGE_DIR);
    let version = workspace_version(root)?;
    let install_root = packages.join("install");
    let mut cargo = Command::new(env!("CARGO"));
    cargo.current_dir(&packages).args(["install", "--debug", "--locked", "--force", "--root"]).arg(&install_root);
    cargo.arg("--path").arg(unpacked(&packages, "cairnq-cli", &version));
    cargo.env("CARGO_TARGET_DIR", packages.join("install-target"));
    for name in published.iter().filter(|name| name.as_str() != "cairnq-cli") {
        let path = unpacked(&packages, name, &version);
        cargo.arg("--config").arg(format!("patch.crates-io.{name}.path={:?}", path.display().to_string()));
    }
    run_to_success(&mut cargo, "cargo install of the packaged cairnq-cli")?;
    let cairnq = install_root.join("bin").join("cairnq");
    let output =
        Command::new(&cairnq).arg("--help").output().map_err(|e| format!("cannot run {}: {e}", cairnq.display()))?;
    let help = String::from_utf8_lossy(&output.stdout);
    if output.status.success() && help.contains("Usage") {
        println!("package: every published crate packages and builds; the installed cairnq answers --help");
        Ok(())
    } else {
        Err(format!("the installed cairnq --help failed ({}): {help}", output.status))
    }
}

/// Where `cargo package` unpacked one crate: `<name>-<version>`.
fn unpacked(packages: &Path, name: &str, version: &str) -> PathBuf {
    packages.join(format!("{name}-{version}"))
}

/// The version every internal crate shares: `[workspace.package] version`.
fn workspace_version(root: &Path) -> Result<String, String> {
    let manifest = fs::read_to_string(root.join("Cargo.toml")).map_err(|e| format!("cannot read Cargo.toml: {e}"))?;
    let section = manifest.split("[workspace.package]").nth(1).unwrap_or("");
    section
        .lines()
        .take_while(|line| !line.starts_with('['))
        .find_map(|line| line.strip_prefix("version = "))
        .map(|value| value.trim().trim_matches('"').to_string())
        .ok_or_else(|| "no version in [workspace.package] of Cargo.toml".to_string())
}

fn run_to_success(command: &mut Command, what: &str) -> Result<(), String> {
    let status = command.status().map_err(|e| format!("cannot start {what}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{what} failed ({status})")) }
}
