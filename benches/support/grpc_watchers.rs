//! The grpc_load bench's watchers (over gRPC or embedded) and the check of what they received:
//! every event once, in order, nothing lost.

use super::*;

#[derive(serde::Deserialize)]
pub(super) struct Head {
    pub(super) metadata: HeadMeta,
}

#[derive(serde::Deserialize)]
pub(super) struct HeadMeta {
    #[serde(rename = "resourceVersion")]
    pub(super) resource_version: String,
}

// ---------------------------------------------------------------------------------------------
// Watchers.

#[derive(Default)]
pub(super) struct WatcherOut {
    /// ADDED/MODIFIED/DELETED events: (resourceVersion, received at, first letter of the type).
    pub(super) events: Vec<(u64, Instant, u8)>,
    pub(super) by_type: HashMap<String, usize>,
    pub(super) errors: Vec<String>,
    /// The stream ended (gRPC: end of stream without a transport error; embedded: stopped).
    pub(super) ended_cleanly: bool,
    pub(super) last_was_bookmark: bool,
}

impl WatcherOut {
    fn event(&mut self, ty: &str, rv: u64, progress: &AtomicU64) {
        *self.by_type.entry(ty.to_string()).or_default() += 1;
        self.last_was_bookmark = ty == "BOOKMARK";
        if matches!(ty, "ADDED" | "MODIFIED" | "DELETED") {
            self.events.push((rv, Instant::now(), ty.as_bytes()[0]));
            progress.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A watcher's progress: change events received, and whether it has stopped.
#[derive(Default)]
pub(super) struct Progress {
    pub(super) events: AtomicU64,
    pub(super) done: AtomicBool,
}

pub(super) async fn grpc_watcher(
    mut client: StoreClient<Channel>,
    rev: u64,
    progress: Arc<Progress>,
    ready: tokio::sync::oneshot::Sender<()>,
) -> WatcherOut {
    let mut out = WatcherOut::default();
    let req = pb::WatchRequest {
        resource: RESOURCE.into(),
        namespace: NS.into(),
        resource_version: rev.to_string(),
        allow_watch_bookmarks: true,
        ..Default::default()
    };
    let resp = client.watch(req).await;
    let _ = ready.send(());
    let mut stream = match resp {
        Ok(r) => r.into_inner(),
        Err(e) => {
            out.errors.push(format!("watch refused: {:?}: {}", e.code(), e.message()));
            progress.done.store(true, Ordering::Release);
            return out;
        }
    };
    loop {
        match stream.message().await {
            Ok(Some(ev)) => {
                if ev.r#type == "ERROR" {
                    let msg = ev.object.map(|b| String::from_utf8_lossy(&b.data).into_owned()).unwrap_or_default();
                    out.errors.push(format!("ERROR event: {msg}"));
                }
                out.event(&ev.r#type, ev.resource_version, &progress.events);
            }
            Ok(None) => {
                out.ended_cleanly = true;
                break;
            }
            Err(e) => {
                out.errors.push(format!("stream failed: {:?}: {}", e.code(), e.message()));
                break;
            }
        }
    }
    progress.done.store(true, Ordering::Release);
    out
}

pub(super) fn embedded_watcher(
    store: &Store,
    rev: u64,
    progress: &Progress,
    stop: &AtomicBool,
    registered: &std::sync::Barrier,
) -> WatcherOut {
    let mut out = WatcherOut::default();
    let opts = WatchOptions { resource_version: Some(rev.to_string()), allow_bookmarks: true, ..Default::default() };
    let res = store.watch(&Collection::new(RESOURCE, Some(NS)), &opts);
    registered.wait();
    let mut w = match res {
        Ok(w) => w,
        Err(e) => {
            out.errors.push(format!("watch refused: {e}"));
            progress.done.store(true, Ordering::Release);
            return out;
        }
    };
    while !stop.load(Ordering::Acquire) {
        match w.next_timeout(Duration::from_millis(20)) {
            Some(ev) => {
                if let WatchEvent::Error(e) = &ev {
                    out.errors.push(format!("ERROR event: {e}"));
                }
                out.event(ev.type_name(), ev.revision().map_or(0, |r| r.0), &progress.events);
            }
            None if w.is_ended() => break,
            None => {}
        }
    }
    out.ended_cleanly = stop.load(Ordering::Acquire);
    progress.done.store(true, Ordering::Release);
    out
}

/// Whether every watcher has `target` change events or has stopped.
pub(super) fn caught_up(progress: &[Arc<Progress>], target: u64) -> bool {
    progress.iter().all(|p| p.events.load(Ordering::Relaxed) >= target || p.done.load(Ordering::Acquire))
}

pub(super) struct WatchReport {
    pub(super) watchers: usize,
    pub(super) expected: usize,
    pub(super) delivered: usize,
    pub(super) lost: usize,
    pub(super) duplicates: usize,
    pub(super) out_of_order: usize,
    pub(super) unexpected: usize,
    pub(super) error_watchers: usize,
    pub(super) first_error: Option<String>,
    pub(super) caught_up: bool,
    pub(super) wait: Duration,
    /// Last watcher's receipt of its last expected event − last acknowledgement (s, signed).
    pub(super) lag: Option<f64>,
    /// Receipt − acknowledgement per delivered event (s, signed), sorted.
    pub(super) delivery: Vec<f64>,
    pub(super) bookmarks: usize,
    /// What went wrong for the first few watchers that missed or misordered events.
    pub(super) anomalies: Vec<String>,
}

pub(super) fn signed(a: Instant, b: Instant) -> f64 {
    if a >= b {
        (a - b).as_secs_f64()
    } else {
        -(b - a).as_secs_f64()
    }
}

pub(super) fn check_watchers(
    outs: &[WatcherOut],
    acks: &HashMap<u64, Instant>,
    last_ack: Instant,
    caught_up: bool,
    wait: Duration,
) -> WatchReport {
    let expected: HashSet<u64> = acks.keys().copied().collect();
    let max_rv = acks.keys().copied().max().unwrap_or(0);
    let mut r = WatchReport {
        watchers: outs.len(),
        expected: expected.len() * outs.len(),
        delivered: 0,
        lost: 0,
        duplicates: 0,
        out_of_order: 0,
        unexpected: 0,
        error_watchers: 0,
        first_error: None,
        caught_up,
        wait,
        lag: None,
        delivery: Vec::new(),
        bookmarks: 0,
        anomalies: Vec::new(),
    };
    let mut last_receipt: Option<Instant> = None;
    for (w, o) in outs.iter().enumerate() {
        if !o.errors.is_empty() {
            r.error_watchers += 1;
            r.first_error.get_or_insert_with(|| o.errors[0].clone());
        }
        r.bookmarks += o.by_type.get("BOOKMARK").copied().unwrap_or(0);
        let mut seen = HashSet::new();
        let mut misordered = Vec::new();
        for (k, &(rv, at, _)) in o.events.iter().enumerate() {
            if k > 0 && rv <= o.events[k - 1].0 {
                r.out_of_order += 1;
                if misordered.len() < 3 {
                    let around: Vec<String> = o.events[k.saturating_sub(3)..(k + 3).min(o.events.len())]
                        .iter()
                        .map(|e| format!("{}{}", e.2 as char, e.0))
                        .collect();
                    misordered.push(format!("#{k}: {}", around.join(" ")));
                }
            }
            if !seen.insert(rv) {
                r.duplicates += 1;
                continue;
            }
            match acks.get(&rv) {
                Some(&ack) => {
                    r.delivered += 1;
                    r.delivery.push(signed(at, ack));
                }
                None => r.unexpected += 1,
            }
            if rv == max_rv {
                last_receipt = Some(last_receipt.map_or(at, |l| l.max(at)));
            }
        }
        let mut missing: Vec<u64> = expected.iter().filter(|rv| !seen.contains(rv)).copied().collect();
        r.lost += missing.len();
        if (!missing.is_empty() || !misordered.is_empty()) && r.anomalies.len() < 3 {
            missing.sort_unstable();
            let shown: Vec<String> = missing.iter().take(10).map(u64::to_string).collect();
            r.anomalies.push(format!(
                "watcher {w}: {} events, last {:?}, missing {} ({}{}), out of order at {}",
                o.events.len(),
                o.events.last().map(|e| e.0),
                missing.len(),
                shown.join(" "),
                if missing.len() > 10 { " …" } else { "" },
                if misordered.is_empty() { "-".to_string() } else { misordered.join("; ") }
            ));
        }
    }
    if r.lost == 0 && !outs.is_empty() {
        r.lag = last_receipt.map(|l| signed(l, last_ack));
    }
    r.delivery.sort_by(f64::total_cmp);
    r
}
