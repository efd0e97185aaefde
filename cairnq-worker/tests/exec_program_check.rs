//! `ExecHandler::check_program`: the check `cairnq worker --exec` runs
//! before any task, on real files and the real `sh` (module `program`).
//! Apart from tests/exec.rs because it runs no worker: only the command
//! line and the files it names.

use cairnq_worker::exec::{ExecHandler, ExecOptions};

/// The program a command line starts is checked on real files before any
/// task runs: a path must be an executable file (relative ones in the
/// command's directory), a bare name something `sh` finds, an
/// interpreter's script a file; what the shell alone can read is taken
/// as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_program_of_a_command_line_is_checked_before_it_runs() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let script = dir.path().join("resize.sh");
    std::fs::write(&script, "#!/bin/sh\necho null\n").expect("write the script");
    std::fs::write(dir.path().join("plain.sh"), "echo null\n").expect("write the script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod +x");
    let in_dir = ExecOptions::new().current_dir(dir.path());
    let check = |command: &str, options: ExecOptions| {
        let handler = ExecHandler::with_options(command, options).expect("a command line");
        async move { handler.check_program().await.map_err(|e| e.to_string()) }
    };
    for fine in ["./resize.sh --quality 80 | tee log", "sh plain.sh", "cat", "exit 0", "\"$TOOL\" run", "X=1 ./gone"] {
        assert_eq!(check(fine, in_dir.clone()).await, Ok(()), "{fine}");
    }
    assert_eq!(check(&script.display().to_string(), ExecOptions::new()).await, Ok(()));
    for (wrong, says) in [
        ("./gone.sh", "./gone.sh does not exist (relative to"),
        ("./plain.sh", "./plain.sh is not executable"),
        ("./", "./ is a directory"),
        ("no-such-program-here --x", "no-such-program-here is not a command sh can find"),
        ("python3 -u gone.py", ""),
        ("sh gone.sh", "gone.sh, the script sh is to run, does not exist"),
    ] {
        let checked = check(wrong, in_dir.clone()).await;
        match says {
            // An option where the script would be: nothing more is checked.
            "" => assert_eq!(checked, Ok(()), "{wrong}"),
            _ => assert!(checked.as_ref().is_err_and(|e| e.contains(says)), "{wrong}: {checked:?}"),
        }
    }
    // Relative to the command's directory, not the worker's.
    assert!(check("./resize.sh", ExecOptions::new()).await.is_err());
}
