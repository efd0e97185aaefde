//! Handler panics without a panic report per task.
//!
//! The worker catches a handler's panic and records it in the task's error
//! envelope (a retryable `handler_error` of type `Panic`), so the default
//! hook's report on stderr (with a backtrace under `RUST_BACKTRACE`) only
//! repeats it, once per task: a poison payload in a queue of thousands
//! buries every other line. The worker installs, once per process, a hook
//! that stays silent while a handler is being polled on the current thread
//! and hands every other panic to the hook that was there before.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

thread_local! {
    /// Whether this thread is running handler code right now.
    static IN_HANDLER: Cell<bool> = const { Cell::new(false) };
}

/// Installs the quieting hook (once per process; later calls do nothing).
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_HANDLER.get() {
                previous(info);
            }
        }));
    });
}

/// Runs `f` as handler code: a panic in it is not reported by the hook.
pub(crate) fn quietly<T>(f: impl FnOnce() -> T) -> T {
    let _marked = Marked::new();
    f()
}

/// Polls `future` as handler code.
pub(crate) struct Quiet<F: ?Sized>(pub(crate) Pin<Box<F>>);

impl<F: Future + ?Sized> Future for Quiet<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let _marked = Marked::new();
        self.0.as_mut().poll(cx)
    }
}

/// Marks the thread as running handler code until dropped (also when a
/// panic unwinds through it), restoring what was there before.
struct Marked(bool);

impl Marked {
    fn new() -> Self {
        Self(IN_HANDLER.replace(true))
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        IN_HANDLER.set(self.0);
    }
}
