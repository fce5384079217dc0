//! Work split over threads that start together, for the load benches.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// Runs `work(index)` for indexes `0..n` split round-robin over `threads` threads, all starting
/// together; returns the wall time.
pub fn run_threads(threads: usize, n: usize, work: impl Fn(usize) + Sync) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (barrier, work) = (&barrier, &work);
            s.spawn(move || {
                barrier.wait();
                for i in (t..n).step_by(threads) {
                    work(i);
                }
            });
        }
        barrier.wait();
        let start = Instant::now();
        // The scope joins every thread before returning.
        start
    })
    .elapsed()
}
