//! The book's shell transcripts run as written. Every ```` ```console ````
//! block under `docs/src` is read as a session a reader would type: each
//! `$ ` line is a command run with `sh -c` in a fresh directory (the built
//! `cairnq` first on PATH, `CAIRNQ_DB=tasks.db` unless the block exports
//! another, migrated first: a reader's queue exists before they operate
//! it), and the lines under it are what it printed. The rules:
//!
//! - `$ cat FILE` followed by lines shows a file: the test writes it
//!   (executable), as the reader would have.
//! - A command ending in `&` runs in the background until the block ends.
//! - A printed line is checked (it must be a line of the command's output)
//!   unless it is a table row (`ID ...` headers, rows naming a `task_` id,
//!   whose ids and ages differ on every run). A command whose output does
//!   not match yet is run again for up to a minute, as a reader waits for the
//!   worker started above it.
//! - Every command exits 0, except one followed by `$ echo $?`, whose
//!   printed code is the expected one.
//! - A foreground `cairnq worker`, `top` or `web` never ends, so it is not
//!   run (those blocks name programs the reader writes, e.g. `thumbnail.py`;
//!   the worker's own tests run `--exec` and `--serve` with real programs).
//!
//! The ```` ```sh ```` blocks are not transcripts: the book's cargo commands
//! are CI's own steps, `echo.sh` is run by the `--serve` tests, and the curl
//! lines need a running dashboard (its API is tested in cairnq-web).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::binary;

/// How long a command whose output does not match yet is retried.
const PATIENCE: Duration = Duration::from_secs(60);

/// One `$ ` line of a transcript and the lines printed under it.
#[derive(Debug)]
struct Step {
    command: String,
    printed: Vec<String>,
}

/// The console blocks of one chapter, each as its steps.
fn transcripts(chapter: &str) -> Vec<Vec<Step>> {
    let mut blocks = Vec::new();
    let mut current: Option<Vec<Step>> = None;
    for line in chapter.lines() {
        match (&mut current, line.trim_end()) {
            (None, "```console") => current = Some(Vec::new()),
            (Some(_), "```") => blocks.extend(current.take()),
            (Some(steps), text) => match text.strip_prefix("$ ") {
                Some(command) => steps.push(Step { command: command.to_string(), printed: Vec::new() }),
                None => steps.last_mut().expect("a console block starts with a command").printed.push(text.into()),
            },
            (None, _) => {}
        }
    }
    blocks
}

fn chapters(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).expect("docs/src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(chapters(&path));
        } else if path.extension().is_some_and(|ext| ext == "md") {
            found.push(path);
        }
    }
    found.sort();
    found
}

/// A fresh directory and environment for one block, and the background
/// commands it started (killed when the block ends).
struct Session {
    dir: tempfile::TempDir,
    env: BTreeMap<String, String>,
    background: Vec<Child>,
    last_code: i32,
}

impl Drop for Session {
    /// Stops each background command's whole process group (the shell and
    /// the `cairnq worker` it started), as the reader's Ctrl-C would.
    fn drop(&mut self) {
        for child in &mut self.background {
            let group = format!("-{}", child.id());
            let _ = Command::new("kill").args(["-s", "TERM", "--", &group]).status();
            let _ = child.wait();
        }
    }
}

impl Session {
    fn new() -> Self {
        let bin_dir = Path::new(binary()).parent().expect("the binary's directory").to_path_buf();
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        let env = BTreeMap::from([("PATH".to_string(), path), ("CAIRNQ_DB".to_string(), "tasks.db".to_string())]);
        let session = Self { dir: tempfile::tempdir().expect("temp dir"), env, background: Vec::new(), last_code: 0 };
        let migrated = session.shell("cairnq migrate").output().expect("run cairnq migrate");
        assert!(migrated.status.success(), "cairnq migrate: {}", String::from_utf8_lossy(&migrated.stderr));
        session
    }

    fn shell(&self, command: &str) -> Command {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command).current_dir(self.dir.path()).env_clear().envs(&self.env);
        shell
    }

    fn run(&mut self, where_: &str, step: &Step, code_checked_next: bool) -> bool {
        let command = step.command.trim();
        if let Some(file) = command.strip_prefix("cat ").map(|rest| rest.split_whitespace().next().unwrap_or("")) {
            self.write_file(file, &step.printed);
            return true;
        }
        if let Some((name, value)) = command.strip_prefix("export ").and_then(|rest| rest.split_once('=')) {
            self.env.insert(name.to_string(), value.to_string());
            return true;
        }
        if command == "echo $?" {
            let printed = step.printed.first().map(|code| code.trim().to_string());
            assert_eq!(printed, Some(self.last_code.to_string()), "{where_}: the exit code of the command above");
            return true;
        }
        if let Some(background) = command.strip_suffix('&') {
            let mut shell = self.shell(background);
            std::os::unix::process::CommandExt::process_group(&mut shell, 0);
            let child = shell.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
            self.background.push(child.unwrap_or_else(|e| panic!("{where_}: cannot start `{command}`: {e}")));
            return true;
        }
        if runs_forever(command) {
            return false;
        }
        let output = self.until_printed(where_, command, &checked_lines(&step.printed));
        self.last_code = output.status.code().unwrap_or(-1);
        if !code_checked_next {
            assert_eq!(self.last_code, 0, "{where_}: `{command}` failed: {}", String::from_utf8_lossy(&output.stderr));
        }
        true
    }

    /// Runs `command` until every line in `want` is a line of its output,
    /// for at most [`PATIENCE`].
    fn until_printed(&self, where_: &str, command: &str, want: &[String]) -> Output {
        let started = Instant::now();
        loop {
            let output = self.shell(command).output().unwrap_or_else(|e| panic!("{where_}: cannot run sh: {e}"));
            let text =
                format!("{}\n{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
            let lines: Vec<&str> = text.lines().map(str::trim_end).collect();
            let missing: Vec<&String> = want.iter().filter(|line| !lines.contains(&line.as_str())).collect();
            if missing.is_empty() {
                return output;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "{where_}: `{command}` never printed {missing:?}; it printed:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    fn write_file(&self, name: &str, lines: &[String]) {
        let path = self.dir.path().join(name);
        std::fs::write(&path, format!("{}\n", lines.join("\n"))).expect("write the shown file");
        let mut permissions = std::fs::metadata(&path).expect("the shown file").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).expect("make it executable");
    }
}

/// Commands that serve until stopped: a reader runs them in a terminal of
/// their own.
fn runs_forever(command: &str) -> bool {
    ["cairnq worker", "cairnq top", "cairnq web"].iter().any(|prefix| command.starts_with(prefix))
}

/// The printed lines a run must reproduce: all but table rows.
fn checked_lines(printed: &[String]) -> Vec<String> {
    printed.iter().filter(|line| !line.starts_with("ID ") && !line.contains("task_")).cloned().collect()
}

#[test]
fn the_books_console_transcripts_run_as_written() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/src");
    let (mut ran, mut not_run) = (0, Vec::new());
    for chapter in chapters(&docs) {
        let text = std::fs::read_to_string(&chapter).expect("a chapter");
        let name = chapter.strip_prefix(&docs).unwrap_or(&chapter).display().to_string();
        for (number, steps) in transcripts(&text).iter().enumerate() {
            let mut session = Session::new();
            for (index, step) in steps.iter().enumerate() {
                let where_ = format!("{name}, console block {}", number + 1);
                let code_checked_next = steps.get(index + 1).is_some_and(|next| next.command.trim() == "echo $?");
                if session.run(&where_, step, code_checked_next) {
                    ran += 1;
                } else {
                    not_run.push(format!("{where_}: {}", step.command));
                }
            }
        }
    }
    eprintln!("ran {ran} transcript commands; not run (they serve until stopped): {not_run:#?}");
    assert!(ran >= 25, "the book's transcripts hold {ran} commands: the parser lost some");
}

#[test]
fn a_transcript_is_read_as_commands_and_what_they_printed() {
    let chapter = "text\n```console\n$ cat a.sh   # shown\n#!/bin/sh\necho hi\n$ cairnq get x\nID  NAME\ntask_01 a\n\
                   cairnq: no task\n$ echo $?\n3\n```\n```sh\n$ not a transcript\n```\n";
    let blocks = transcripts(chapter);
    assert_eq!(blocks.len(), 1, "{blocks:?}");
    let commands: Vec<&str> = blocks[0].iter().map(|step| step.command.as_str()).collect();
    assert_eq!(commands, ["cat a.sh   # shown", "cairnq get x", "echo $?"]);
    assert_eq!(blocks[0][0].printed, ["#!/bin/sh", "echo hi"]);
    assert_eq!(checked_lines(&blocks[0][1].printed), ["cairnq: no task"]);
}
