//! Reading an open watch as a door streams it: the next event, or the server stopping.

use fieldstore_engine::store::{Watch, WatchEvent};

/// What a watch stream sends next.
pub enum Next {
    /// An event of the watch.
    Event(WatchEvent),
    /// The server is stopping (the stream ends, with a last bookmark where allowed).
    Stopping,
    /// The watch ended.
    Ended,
}

/// The watch's next event, or [`Next::Stopping`]: an event that is ready without setting up an
/// await, else the watch and the server's shutdown signal awaited together. Shared by the gRPC
/// and HTTP watch streams.
pub async fn next_event(watch: &mut Watch, shutdown: &mut tokio::sync::watch::Receiver<bool>) -> Next {
    if *shutdown.borrow() {
        return Next::Stopping;
    }
    if let Some(ev) = watch.try_next() {
        return Next::Event(ev);
    }
    tokio::select! {
        biased;
        Ok(_) = shutdown.wait_for(|stop| *stop) => Next::Stopping,
        ev = watch.next_async(tokio::time::sleep) => ev.map_or(Next::Ended, Next::Event),
    }
}
