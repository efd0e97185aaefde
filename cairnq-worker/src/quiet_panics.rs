//! Handler panics without a panic report per task.
//!
//! The worker catches a handler's panic and records it in the task's error
//! envelope (a retryable `handler_error` of type `Panic`), so the default
//! hook's report on stderr (with a backtrace under `RUST_BACKTRACE`) only
//! repeats it, once per task: a poison payload in a queue of thousands
//! buries every other line. The worker installs, once per process, a hook
//! that stays silent while application code cairnq catches the panics of
//! runs on the current thread (a handler being polled, or a backend running
//! the handler's closure: [`cairnq_core::backend::app_code`]) and hands
//! every other panic to the hook that was there before.
//!
//! A hook set after the worker started replaces this one (Rust has one
//! hook per process, and no way to tell whose it is): handler panics are
//! then reported by that hook again. Set an application's hook before
//! starting workers; this one passes every other panic on to it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Once;
use std::task::{Context, Poll};

use cairnq_core::backend::{app_code, in_app_code};

/// Installs the quieting hook (once per process; later calls do nothing).
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !in_app_code() {
                previous(info);
            }
        }));
    });
}

/// Polls `future` as handler code.
pub(crate) struct Quiet<F: ?Sized>(pub(crate) Pin<Box<F>>);

impl<F: Future + ?Sized> Future for Quiet<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        app_code(|| self.0.as_mut().poll(cx))
    }
}
