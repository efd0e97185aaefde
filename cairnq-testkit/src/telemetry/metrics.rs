//! The test recorder for the `metrics` facade: it keeps every counter, gauge
//! and histogram count for the life of the process, so tests running in
//! parallel in one binary can each read their own series (told apart by a
//! queue of their own) without draining each other's, which a recorder
//! whose snapshots reset values would do.
//!
//! ```no_run
//! use cairnq_core::observe::TASKS_SUBMITTED;
//! let recorder = cairnq_testkit::telemetry::recorder();
//! // ... submit tasks on queue "q1" ...
//! let submitted = recorder.counter(TASKS_SUBMITTED, &[("queue", "q1")]);
//! # let _ = submitted;
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use metrics::{Counter, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use parking_lot::Mutex;

/// Every series recorded, by name and labels.
#[derive(Debug, Default)]
pub struct CountingRecorder {
    series: Mutex<HashMap<Series, Arc<AtomicU64>>>,
}

/// One series: its kind, name and sorted labels.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Series {
    kind: Kind,
    name: String,
    labels: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Counter,
    Gauge,
    /// Histograms are kept as their number of observations.
    Histogram,
}

/// The process's counting recorder, installed as the global recorder on
/// first use. Panics if another global recorder was installed first.
pub fn recorder() -> &'static CountingRecorder {
    static RECORDER: OnceLock<&'static CountingRecorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder: &'static CountingRecorder = Box::leak(Box::default());
        metrics::set_global_recorder(recorder).expect("no other global metrics recorder in this test process");
        recorder
    })
}

impl CountingRecorder {
    /// The sum of every counter named `name` whose labels include `labels`.
    pub fn counter(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.sum(Kind::Counter, name, labels)
    }

    /// The number of observations of the histograms named `name` whose
    /// labels include `labels`.
    pub fn observations(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.sum(Kind::Histogram, name, labels)
    }

    /// The value of every gauge named `name` whose labels include `labels`,
    /// with its labels.
    pub fn gauges(&self, name: &str, labels: &[(&str, &str)]) -> Vec<(Vec<(String, String)>, f64)> {
        self.matching(Kind::Gauge, name, labels)
            .map(|(series, cell)| (series.labels.clone(), f64::from_bits(cell.load(Ordering::Relaxed))))
            .collect()
    }

    fn sum(&self, kind: Kind, name: &str, labels: &[(&str, &str)]) -> u64 {
        self.matching(kind, name, labels).map(|(_, cell)| cell.load(Ordering::Relaxed)).sum()
    }

    fn matching<'a>(
        &self,
        kind: Kind,
        name: &'a str,
        labels: &'a [(&str, &str)],
    ) -> impl Iterator<Item = (Series, Arc<AtomicU64>)> + 'a {
        let series: Vec<_> = self.series.lock().iter().map(|(s, c)| (s.clone(), c.clone())).collect();
        series.into_iter().filter(move |(s, _)| {
            s.kind == kind
                && s.name == name
                && labels.iter().all(|(k, v)| s.labels.iter().any(|(sk, sv)| sk == k && sv == v))
        })
    }

    fn cell(&self, kind: Kind, key: &Key) -> Arc<AtomicU64> {
        let mut labels: Vec<_> = key.labels().map(|l| (l.key().to_string(), l.value().to_string())).collect();
        labels.sort();
        let series = Series { kind, name: key.name().to_string(), labels };
        self.series.lock().entry(series).or_default().clone()
    }
}

/// A histogram as its count of observations.
struct Observations(Arc<AtomicU64>);

impl HistogramFn for Observations {
    fn record(&self, _value: f64) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Recorder for CountingRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.cell(Kind::Counter, key))
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::from_arc(self.cell(Kind::Gauge, key))
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(Arc::new(Observations(self.cell(Kind::Histogram, key))))
    }
}
