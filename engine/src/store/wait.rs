//! Waiting on this thread for what another thread finishes within microseconds (a commit, the
//! next watch event): a few spins, then a few yields, then the thread parks, as crossbeam's
//! channels wait. Parking at once (as `pollster` and flume's blocking receive do) costs the
//! other thread a futex wake per hand-off: embedded creates from 8 threads ran 8 % slower.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};

/// Spins rounds `0..SPINS`, yields until `SPINS_AND_YIELDS`, then the caller parks.
const SPINS: u32 = 6;
const SPINS_AND_YIELDS: u32 = 10;

/// One step of waiting: `false` once the caller should park (or block) instead.
pub(crate) fn backoff(step: u32) -> bool {
    if step < SPINS {
        (0..1u32 << step).for_each(|_| std::hint::spin_loop());
    } else if step < SPINS_AND_YIELDS {
        thread::yield_now();
    } else {
        return false;
    }
    true
}

/// Wakes the thread that runs [`block_on`].
struct Signal {
    thread: Thread,
    woken: AtomicBool,
}

impl Wake for Signal {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.woken.store(true, Ordering::Release);
        // Only a parked thread needs the system call; a spinning one sees the flag.
        self.thread.unpark();
    }
}

/// Runs `fut` to completion on this thread (the blocking verbs run the async write path so).
pub(crate) fn block_on<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let signal = Arc::new(Signal { thread: thread::current(), woken: AtomicBool::new(false) });
    let waker = Waker::from(signal.clone());
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        let mut step = 0;
        while !signal.woken.swap(false, Ordering::Acquire) {
            if !backoff(step) {
                thread::park();
            }
            step += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completes_what_another_thread_finishes_early_or_late() {
        for delay_ms in [0, 5] {
            let (tx, rx) = flume::bounded::<u32>(1);
            let sender = thread::spawn(move || {
                thread::sleep(std::time::Duration::from_millis(delay_ms));
                tx.send(7).unwrap();
            });
            assert_eq!(block_on(rx.recv_async()).unwrap(), 7);
            sender.join().unwrap();
        }
    }
}
