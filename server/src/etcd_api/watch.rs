//! The `Watch` service: one task per stream reads the client's requests (create, cancel,
//! progress) and one task per watch sends its events, all into the stream's one channel.
//!
//! As etcd: watch ids are per stream, picked from 0 up unless the client gives one; a watch
//! from a compacted revision is created, then canceled with `compact_revision` set; progress
//! notifications (`progress_notify`, every [`super::EtcdApi::progress_interval`]) and the
//! answer to `RequestProgress` (watch id -1) carry a revision up to which every event was
//! sent, and go only to (or wait for) watches that are caught up; with `fragment`, responses
//! above `--max-request-bytes` are split.

use super::{convert, rpc, status, EtcdApi, MAX_REQUEST_BYTES};
use fieldstore_engine::store::etcd_api::{EtcdApiError, EtcdWatch, KeyEvent, WatchRequest};
use fieldstore_engine::Error;
use futures_util::StreamExt;
use prost::Message;
use std::collections::HashMap;
use std::pin::Pin;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

type Out = mpsc::Sender<Result<rpc::WatchResponse, Status>>;
/// The stream's client is gone.
type Gone = mpsc::error::SendError<Result<rpc::WatchResponse, Status>>;
type WatchStream = Pin<Box<dyn futures_util::Stream<Item = Result<rpc::WatchResponse, Status>> + Send>>;

/// The watch id etcd's answers to `RequestProgress` carry (`clientv3.InvalidWatchID`).
const ALL_WATCHES: i64 = -1;

/// Asks a watch's task for the revision its progress may report.
struct ProgressQuery(oneshot::Sender<Option<u64>>);

/// A running watch: its task and how to ask it.
struct Running {
    ask: mpsc::Sender<ProgressQuery>,
    task: tokio::task::JoinHandle<()>,
}

#[tonic::async_trait]
impl rpc::watch_server::Watch for EtcdApi {
    type WatchStream = WatchStream;

    async fn watch(&self, request: Request<Streaming<rpc::WatchRequest>>) -> Result<Response<Self::WatchStream>, Status> {
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(run_stream(self.clone(), request.into_inner(), tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }
}

fn response(api: &EtcdApi, watch_id: i64) -> rpc::WatchResponse {
    rpc::WatchResponse { header: api.current(), watch_id, ..rpc::WatchResponse::default() }
}

/// The canceling answer to a watch that failed: etcd's for a compacted revision.
fn canceled(api: &EtcdApi, watch_id: i64, e: &Error) -> rpc::WatchResponse {
    let mut r = response(api, watch_id);
    r.canceled = true;
    match e {
        Error::EtcdApi(EtcdApiError::Compacted) => r.compact_revision = i64::try_from(api.store.compacted_revision().0).unwrap_or(i64::MAX),
        other => r.cancel_reason = status(other).message().to_string(),
    }
    r
}

async fn run_stream(api: EtcdApi, mut inbound: Streaming<rpc::WatchRequest>, tx: Out) {
    use rpc::watch_request::RequestUnion;
    let mut watches: HashMap<i64, Running> = HashMap::new();
    let mut next_id = 0i64;
    while let Some(Ok(req)) = inbound.next().await {
        watches.retain(|_, r| !r.task.is_finished());
        let sent = match req.request_union {
            Some(RequestUnion::CreateRequest(c)) => {
                let id = if c.watch_id != 0 {
                    c.watch_id
                } else {
                    while watches.contains_key(&next_id) {
                        next_id += 1;
                    }
                    next_id
                };
                if watches.contains_key(&id) {
                    let mut r = response(&api, id);
                    r.created = true;
                    r.canceled = true;
                    r.cancel_reason = "etcdserver: duplicate watch ID provided on the WatchStream".into();
                    tx.send(Ok(r)).await
                } else {
                    create(&api, &mut watches, id, c, &tx).await
                }
            }
            Some(RequestUnion::CancelRequest(c)) => match watches.remove(&c.watch_id) {
                Some(running) => {
                    running.task.abort();
                    let mut r = response(&api, c.watch_id);
                    r.canceled = true;
                    tx.send(Ok(r)).await
                }
                None => Ok(()),
            },
            Some(RequestUnion::ProgressRequest(_)) => {
                let revision = progress_all(&api, &watches).await;
                let mut r = response(&api, ALL_WATCHES);
                r.header = EtcdApi::header(revision);
                tx.send(Ok(r)).await
            }
            None => Ok(()),
        };
        if sent.is_err() {
            break;
        }
    }
    for (_, running) in watches {
        running.task.abort();
    }
}

async fn create(api: &EtcdApi, watches: &mut HashMap<i64, Running>, id: i64, c: rpc::WatchCreateRequest, tx: &Out) -> Result<(), Gone> {
    use rpc::watch_create_request::FilterType;
    // etcd: an empty key is the smallest key, "\0".
    let key = if c.key.is_empty() { vec![0] } else { c.key };
    let req = WatchRequest {
        key,
        range_end: c.range_end,
        start_revision: c.start_revision,
        prev_kv: c.prev_kv,
        no_put: c.filters.contains(&(FilterType::Noput as i32)),
        no_delete: c.filters.contains(&(FilterType::Nodelete as i32)),
    };
    let mut created = response(api, id);
    created.created = true;
    match api.store.etcd_watch(req) {
        Ok(w) => {
            tx.send(Ok(created)).await?;
            let (ask, asked) = mpsc::channel(4);
            let task = tokio::spawn(run_watch(api.clone(), id, w, c.fragment, c.progress_notify, tx.clone(), asked));
            watches.insert(id, Running { ask, task });
            Ok(())
        }
        Err(e @ Error::EtcdApi(EtcdApiError::Compacted)) => {
            tx.send(Ok(created)).await?;
            tx.send(Ok(canceled(api, id, &e))).await
        }
        Err(e) => {
            let mut r = canceled(api, id, &e);
            r.created = true;
            tx.send(Ok(r)).await
        }
    }
}

/// The revision every watch of the stream has sent everything up to, once they all have
/// caught up (asked again until then).
async fn progress_all(api: &EtcdApi, watches: &HashMap<i64, Running>) -> u64 {
    loop {
        let mut lowest = api.store.revision().0;
        let mut synced = true;
        for running in watches.values() {
            let (reply, answer) = oneshot::channel();
            if running.ask.send(ProgressQuery(reply)).await.is_err() {
                continue;
            }
            match answer.await {
                Ok(Some(rev)) => lowest = lowest.min(rev),
                Ok(None) => synced = false,
                Err(_) => {}
            }
        }
        if synced {
            return lowest;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Sends `events` as one response, or as fragments of at most `--max-request-bytes` when the
/// watch asked for fragments.
async fn send_events(api: &EtcdApi, id: i64, events: Vec<KeyEvent>, fragment: bool, tx: &Out) -> Result<(), Gone> {
    let revision = events.last().map_or(0, |e| u64::try_from(e.kv.mod_revision).unwrap_or(0));
    let mut r = response(api, id);
    r.header = EtcdApi::header(revision);
    r.events = events.into_iter().map(convert::event).collect();
    if !fragment || r.encoded_len() <= MAX_REQUEST_BYTES {
        return tx.send(Ok(r)).await;
    }
    let all = std::mem::take(&mut r.events);
    let mut chunk = Vec::new();
    let mut size = 0;
    let count = all.len();
    for (i, ev) in all.into_iter().enumerate() {
        let len = ev.encoded_len() + 8;
        if !chunk.is_empty() && size + len > MAX_REQUEST_BYTES {
            let mut part = r.clone();
            part.events = std::mem::take(&mut chunk);
            part.fragment = true;
            tx.send(Ok(part)).await?;
            size = 0;
        }
        size += len;
        chunk.push(ev);
        if i + 1 == count {
            let mut last = r.clone();
            last.events = std::mem::take(&mut chunk);
            tx.send(Ok(last)).await?;
        }
    }
    Ok(())
}

async fn run_watch(
    api: EtcdApi,
    id: i64,
    mut w: EtcdWatch,
    fragment: bool,
    progress_notify: bool,
    tx: Out,
    mut asked: mpsc::Receiver<ProgressQuery>,
) {
    let mut tick = tokio::time::interval(api.progress_interval);
    tick.tick().await;
    loop {
        tokio::select! {
            next = w.next_async() => match next {
                Ok(Some(events)) => {
                    if send_events(&api, id, events, fragment, &tx).await.is_err() {
                        return;
                    }
                }
                Ok(None) => return,
                Err(e) => {
                    let _ = tx.send(Ok(canceled(&api, id, &e))).await;
                    return;
                }
            },
            Some(ProgressQuery(reply)) = asked.recv() => {
                let _ = reply.send(w.progress());
            }
            _ = tick.tick(), if progress_notify => {
                if let Some(rev) = w.progress() {
                    let mut r = response(&api, id);
                    r.header = EtcdApi::header(rev);
                    if tx.send(Ok(r)).await.is_err() {
                        return;
                    }
                }
            }
        }
    }
}
