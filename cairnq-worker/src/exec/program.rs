//! The check of a command line before any task runs it: the program it
//! starts must be there and executable. Without it a wrong path fails every
//! task, each attempt, with `sh`'s exit 127, and the mistake shows only in
//! error envelopes; checked at the start, a worker refuses to run at all
//! and says why.
//!
//! Only what a command line says plainly is checked: its first word, when
//! it holds no quoting, expansion or assignment (`"$TOOL" run`,
//! `FOO=1 ./x` and `cd dir && ./x` are taken as they are), and, when that
//! word is a well-known interpreter (`sh`, `python3`, `node`, ...), the
//! script it is given (its first argument, unless an option). A word with a
//! `/` is a path (relative to the command's directory) that must be an
//! executable file; a bare word must be something `sh` can run (a builtin,
//! a keyword, or a program on `PATH`, as `command -v` finds it).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use rustix::fs::{Access, access};
use tokio::process::Command;

/// Interpreters whose first argument, when not an option, is a script file.
const INTERPRETERS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "python", "python3", "node", "ruby", "perl", "php"];

/// Characters that end a word of a command line.
const WORD_END: &[char] = &[';', '&', '|', '<', '>', '(', ')'];

/// Characters that make a word something only the shell can read: quoting,
/// expansions, globs, assignments, comments.
const SHELL_SYNTAX: &[char] = &['"', '\'', '\\', '$', '`', '*', '?', '[', ']', '{', '}', '~', '=', '#', '!'];

/// What is wrong with the program `command` runs, in words for its
/// operator; `Ok` when nothing is, or nothing can be told before it runs.
pub(super) async fn check(command: &str, dir: Option<&Path>) -> Result<(), String> {
    let mut words = plain_words(command);
    let Some(program) = words.next() else { return Ok(()) };
    if program.contains('/') {
        let path = resolve(program, dir);
        on_blocking(move || executable_file(&path))
            .await
            .map_err(|why| format!("{program} {why}{}", relative(program, dir)))?;
    } else {
        found_by_sh(program, dir).await?;
    }
    let program_name = program.rsplit('/').next().unwrap_or(program);
    if INTERPRETERS.contains(&program_name)
        && let Some(script) = words.next().filter(|w| !w.starts_with('-'))
    {
        let path = resolve(script, dir);
        let found = on_blocking(move || file(&path)).await;
        found.map_err(|why| format!("{script}, the script {program} is to run, {why}{}", relative(script, dir)))?;
    }
    Ok(())
}

/// `word` as a path: in `dir` when given (a relative path is the
/// command's, which runs there), else as the worker sees it.
fn resolve(word: &str, dir: Option<&Path>) -> PathBuf {
    dir.map_or_else(|| PathBuf::from(word), |dir| dir.join(word))
}

/// ` (relative to DIR)` for a relative path, naming where it was looked for.
fn relative(word: &str, dir: Option<&Path>) -> String {
    if Path::new(word).is_absolute() {
        return String::new();
    }
    let dir = dir.map(Path::to_path_buf).or_else(|| std::env::current_dir().ok()).unwrap_or_default();
    format!(" (relative to {})", dir.display())
}

/// The leading words of `command` the shell reads as they are written;
/// it stops at the first that holds shell syntax, or at an operator.
fn plain_words(command: &str) -> impl Iterator<Item = &str> {
    let head = command.split(WORD_END).next().unwrap_or_default();
    head.split_whitespace().map_while(|word| (!word.contains(SHELL_SYNTAX)).then_some(word))
}

async fn on_blocking(check: impl FnOnce() -> Result<(), String> + Send + 'static) -> Result<(), String> {
    // A check that could not run (a panicked thread) refuses nothing.
    tokio::task::spawn_blocking(check).await.unwrap_or(Ok(()))
}

/// `Ok` for an executable file; otherwise why not (`does not exist`, ...).
fn executable_file(path: &Path) -> Result<(), String> {
    file(path)?;
    access(path, Access::EXEC_OK).map_err(|_| "is not executable (chmod +x?)".to_string())
}

/// `Ok` for a file (not a directory) that is there.
fn file(path: &Path) -> Result<(), String> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => Err("is a directory".to_string()),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err("does not exist".to_string()),
        Err(e) => Err(format!("cannot be read: {e}")),
    }
}

/// Whether `sh` finds `name` (a builtin, a keyword, a program on `PATH`),
/// asked in `dir` with the worker's environment, as the command will be.
async fn found_by_sh(name: &str, dir: Option<&Path>) -> Result<(), String> {
    let mut sh = Command::new("sh");
    sh.args(["-c", "command -v -- \"$1\"", "sh", name])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if let Some(dir) = dir {
        sh.current_dir(dir);
    }
    match sh.status().await {
        Ok(status) if status.success() => Ok(()),
        Ok(_) => {
            let path = std::env::var("PATH").unwrap_or_default();
            Err(format!("{name} is not a command sh can find (no builtin, and not on PATH={path})"))
        }
        Err(e) => Err(format!("cannot start sh to look for {name}: {e}")),
    }
}

#[cfg(test)]
mod tests {
    //! Which words are checked; the checks themselves run on real files in
    //! tests/exec.rs.

    use super::*;

    fn words(command: &str) -> Vec<&str> {
        plain_words(command).collect()
    }

    #[test]
    fn only_words_the_shell_reads_as_written_are_checked() {
        assert_eq!(words("  ./resize.sh --quality 80"), ["./resize.sh", "--quality", "80"]);
        assert_eq!(words("python3 x.py|tee log"), ["python3", "x.py"]);
        assert_eq!(words("cat>/dev/null"), ["cat"]);
        assert_eq!(words("sh run.sh \"$X\" y"), ["sh", "run.sh"]);
        assert!(words("\"$TOOL\" run").is_empty());
        assert!(words("FOO=1 ./x").is_empty());
        assert!(words("~/bin/x").is_empty());
        assert!(words("(cd /tmp && ls)").is_empty());
        assert!(words("   ").is_empty());
    }
}
