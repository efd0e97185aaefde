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

/// Builtins and keywords of `sh` (dash, and bash run as `sh`) a command line
/// may start with: `exec` would look for a program of that name instead.
const SHELL_OWN: &[&str] = &[
    ".", ":", "alias", "bg", "break", "builtin", "case", "cd", "chdir", "command", "continue", "declare", "do", "done",
    "echo", "elif", "else", "esac", "eval", "exec", "exit", "export", "false", "fc", "fg", "fi", "for", "function",
    "getopts", "hash", "if", "in", "jobs", "kill", "let", "local", "printf", "pwd", "read", "readonly", "return",
    "select", "set", "shift", "source", "test", "then", "time", "times", "trap", "true", "type", "typeset", "ulimit",
    "umask", "unalias", "unset", "until", "wait", "while",
];

/// The command line a task's shell runs: `command` itself, or `exec
/// command` when it is one program and its arguments, every word as
/// written (no quoting, expansion, operator, assignment or second line) and
/// the program no builtin or keyword of `sh`. The shell then becomes the
/// program instead of forking it: one process start fewer per task, and the
/// program leads its group itself. Its exit status is the same; a program
/// that is not found still exits 127, its message naming `exec`.
pub(super) fn shell_line(command: &str) -> String {
    let mut words = command.split([' ', '\t']).filter(|w| !w.is_empty());
    let one_program = !command.contains(WORD_END)
        && !command.contains(['\n', '\r'])
        && words.next().is_some_and(|program| !SHELL_OWN.contains(&program) && !program.contains(SHELL_SYNTAX))
        && words.all(|word| !word.contains(SHELL_SYNTAX));
    if one_program { format!("exec {command}") } else { command.to_string() }
}

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
    fn only_one_plain_program_is_execed() {
        assert_eq!(shell_line("cat"), "exec cat");
        assert_eq!(shell_line("  python3 resize.py --quality 80 "), "exec   python3 resize.py --quality 80 ");
        assert_eq!(shell_line("/usr/bin/env -i ./x.sh a,b:c"), "exec /usr/bin/env -i ./x.sh a,b:c");
        for kept in [
            "true",
            "echo hi",
            "exit 3",
            "cat >/dev/null",
            "cat; true",
            "cat && true",
            "cat | tee x",
            "sleep 1 &",
            "cat\ntrue",
            "FOO=1 ./x",
            "sh \"$X\"",
            "ls *.txt",
            "ls ~",
            "(cat)",
            "{ cat; }",
            "cat # note",
            "! cat",
            "while read -r l; do :; done",
            "   ",
        ] {
            assert_eq!(shell_line(kept), kept, "{kept:?} is run as written");
        }
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
