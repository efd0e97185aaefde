//! The log of `cairnq worker`: what the cairnq libraries tell through
//! `tracing` (the worker's reports, each failed attempt of a command, the
//! start line), one line per event on stderr, at the level the operator
//! picks (`--log-level`, or `CAIRNQ_LOG_LEVEL`). Only events of the cairnq
//! crates are written, never spans: a span's fields would prefix every
//! line, and the libraries' per-attempt spans are for tracing backends.

use tracing::Metadata;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;

/// How much the log says; each level includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum LogLevel {
    /// Nothing.
    Off,
    /// Only what stops the worker (an unusable database).
    Error,
    /// Also what goes wrong and is survived: a command's failed attempt, a
    /// failed store call, a lost lease.
    Warn,
    /// Also what happens: the start, a drain, a canceled command.
    Info,
    /// Also every attempt's settlement.
    Debug,
}

impl LogLevel {
    fn filter(self) -> LevelFilter {
        match self {
            Self::Off => LevelFilter::OFF,
            Self::Error => LevelFilter::ERROR,
            Self::Warn => LevelFilter::WARN,
            Self::Info => LevelFilter::INFO,
            Self::Debug => LevelFilter::DEBUG,
        }
    }
}

/// Writes the cairnq events up to `level` to stderr from now on (once per
/// process; a second call changes nothing).
pub(crate) fn install(level: LogLevel) {
    let max = level.filter();
    let wanted =
        move |meta: &Metadata<'_>| meta.is_event() && *meta.level() <= max && meta.target().starts_with("cairnq");
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_filter(filter_fn(wanted).with_max_level_hint(max));
    let _ = tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer));
}
