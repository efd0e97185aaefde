//! Application code cairnq runs and catches the panics of: a worker's
//! handlers, and the closures a backend runs for the application on a
//! thread of its own (SQLite's `complete_with` on its writer thread).
//!
//! Whoever runs such code catches its panic and records it (in the task's
//! error envelope, or as the error of the call), so the panic hook's report
//! on stderr would only repeat it, once per task. Marking the thread while
//! the code runs lets the hook the worker installs stay silent for those
//! panics and for no other; the mark lives here, below the worker and the
//! backends, so both can set it.

use std::any::Any;
use std::cell::Cell;

thread_local! {
    /// Whether this thread is running application code whose panic is
    /// caught and recorded.
    static RUNNING: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` as application code whose panic the caller catches and
/// records: while it runs, [`in_app_code`] is true on this thread (also
/// while a panic of `f` unwinds out of it).
///
/// ```
/// use cairnq_core::backend::{app_code, in_app_code};
/// assert!(!in_app_code());
/// assert!(app_code(in_app_code));
/// let caught = std::panic::catch_unwind(|| app_code(|| panic!("recorded elsewhere")));
/// assert!(caught.is_err() && !in_app_code());
/// ```
pub fn app_code<T>(f: impl FnOnce() -> T) -> T {
    let _marked = Marked(RUNNING.replace(true));
    f()
}

/// Whether this thread is inside [`app_code`] now: a panic hook asks it to
/// tell a panic cairnq catches and records from any other.
pub fn in_app_code() -> bool {
    RUNNING.get()
}

/// The text of a caught panic's payload (`panic!` gives a `&str` or a
/// `String`), for the error or envelope that records it.
///
/// ```
/// let caught = std::panic::catch_unwind(|| panic!("no {}", "width")).unwrap_err();
/// assert_eq!(cairnq_core::backend::panic_message(caught.as_ref()), "no width");
/// ```
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    match (payload.downcast_ref::<&str>(), payload.downcast_ref::<String>()) {
        (Some(text), _) => (*text).to_string(),
        (_, Some(text)) => text.clone(),
        _ => "a non-string panic payload".to_string(),
    }
}

/// Restores the mark that was there before, also when a panic unwinds.
struct Marked(bool);

impl Drop for Marked {
    fn drop(&mut self) {
        RUNNING.set(self.0);
    }
}
