//! The one latency sampler the scale and dashboard workloads share: a
//! median over a fixed number of runs, so every `*_ms` row of the scale
//! table is measured the same way.

use std::time::Instant;

use cairnq_core::Result;

/// How many times each operation is timed at each size (the median counts).
const SAMPLES: usize = 30;

/// Median milliseconds of `SAMPLES` runs of `op`.
pub(super) async fn median_ms<F, Fut, T>(mut op: F) -> Result<f64>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut samples = Vec::with_capacity(SAMPLES);
    for i in 0..SAMPLES {
        let start = Instant::now();
        op(i).await?;
        samples.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[SAMPLES / 2])
}
