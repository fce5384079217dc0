//! Replays Server-Side Apply scenarios in the format of the structured-merge-diff oracle
//! (`../shared/oracle/smd`), printing its output format, so that agreement can be checked field
//! for field.
//!
//! This runs at the level the oracle runs: structured-merge-diff only, without the apiserver's
//! rules (no stripped metadata, no `ancient-changes`, no timestamps).

mod document;

use crate::merge::{ManagedFields, ManagerKey, Operation, Updater};
use crate::schema::{parse_smd_yaml, Schema, TypeRef};
use crate::Error;
use document::{Ahead, Document};
use fieldstore_codec::{fields_v1, Path, PathElement, Set};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{mpsc, Arc};

/// A scenario could not be replayed at all (bad JSON, bad schema, unknown root type, invalid
/// initial object); the oracle prints this as one `{"fatal":…}` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fatal(pub String);

/// Replays a scenario document and returns one JSON line per op.
///
/// # Errors
/// [`Fatal`] when the scenario itself is unusable.
pub fn replay(input: &str) -> Result<Vec<String>, Fatal> {
    let mut text = Vec::new();
    drop(replay_each(input, |piece| text.extend_from_slice(piece))?);
    // Lines end with a newline and hold none (JSON escapes them).
    Ok(text.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| String::from_utf8_lossy(l).into_owned()).collect())
}

/// Replays a scenario document, handing its output (one JSON line per op, each ending with a
/// newline) to `write` in pieces of about 64 KiB as the ops run.
///
/// Memory stays near one op's: the ops are parsed one at a time from their text in `input`, and
/// the answers are handed on as they are written, never held whole (a whole-process replay of
/// large scenarios peaks at a few times the scenario, not at every op's object and answer).
///
/// Two threads share the work. The second reads the document through (checking it is JSON
/// before anything is written, and finding each op's text), handing the first op on as soon as
/// it has read it; then it writes each op's line (the whole object and every manager's set)
/// while the next op runs on the same object (read by both, changed by neither). This one runs
/// the ops: the first while the document is still being read, its line sent once the whole
/// document has read well and nothing after the first op changed what it ran with (else the
/// ops run again from the start, before anything is written). At most one line waits for the
/// writer (`benches/STORE_RESULTS.md`, "Session 32": what the second thread costs in memory).
///
/// What the ops ended with comes back as [`Finished`], for the caller to drop or to leave to
/// the process's exit.
///
/// # Errors
/// [`Fatal`] when the scenario itself is unusable (before any output).
pub fn replay_each(input: &str, mut write: impl FnMut(&[u8]) + Send) -> Result<Finished, Fatal> {
    std::thread::scope(|scope| {
        let (ahead_to, ahead) = mpsc::channel::<Ahead<'_>>();
        let (read_to, read) = mpsc::channel::<Result<Document<'_>, Fatal>>();
        let (lines, to_write) = mpsc::sync_channel::<Line>(1);
        let (written_to, written) = mpsc::channel::<Line>();
        scope.spawn(move || {
            let doc = Document::read(input, Some(&ahead_to));
            drop(ahead_to);
            let good = doc.is_ok();
            let _ = read_to.send(doc);
            if !good {
                return;
            }
            let mut out = Pieces { buf: Vec::with_capacity(Pieces::SIZE + 4096), write: &mut write, fields: String::new() };
            for line in to_write {
                line.write(&mut out);
                out.bytes(b"\n");
                // Handed back to be dropped where it was made (see `Lines`).
                let _ = written_to.send(line);
            }
            out.hand_on();
        });
        let read = || read.recv().unwrap_or_else(|_| Err(Fatal("the scenario's reader stopped".into())));
        run(ahead.recv().ok(), read, &mut Lines { to_write: &lines, written: &written, pending: 0 })
    })
}

/// What a replay's ops ended with: the last object, its managers and the schema.
///
/// Dropping it frees them, which for a large object is a share of the replay's work (a
/// 10,000-item object: ~10M instructions, `benches/STORE_RESULTS.md`, "Session 33"); a process
/// that exits next may leave that to the exit instead (`std::mem::forget`), as `fieldstore
/// replay` does.
pub struct Finished {
    _setup: Setup,
    _live: Arc<Value>,
    _managers: ManagedFields,
}

/// Runs the ops, sending each line to the writer: the first one from `ahead` (when the reader
/// handed it on) while the reader reads on, then, once `read` answers, the others, or all of them
/// again when what the first ran with did not stand.
fn run<'a>(ahead: Option<Ahead<'a>>, read: impl FnOnce() -> Result<Document<'a>, Fatal>, lines: &mut Lines<'_>) -> Result<Finished, Fatal> {
    let Some(ahead) = ahead else { return run_all(&read()?, lines) };
    let mut setup = Setup::new(&document::text(ahead.schema), &document::text(ahead.type_name), ahead.live.and_then(document::parse));
    // The setup's error waits for the document's.
    let first = setup.as_mut().map_err(|e| e.clone()).map(|setup| {
        let mut state = State::new(setup);
        let line = state.run_first(document::parse(ahead.op).unwrap_or(Value::Null));
        (state, line)
    });
    // The document's own errors come first (the oracle reads it whole before anything else).
    let doc = read()?;
    if !doc.ahead_stands {
        drop(first);
        return run_all(&doc, lines);
    }
    let (mut state, line) = first?;
    lines.send(line);
    for (i, op) in doc.ops(1) {
        state.run_and_send(i, op, lines);
    }
    lines.wait();
    let (live, managers) = state.end();
    Ok(Finished { _setup: setup?, _live: live, _managers: managers })
}

/// Runs every op of `doc`.
fn run_all(doc: &Document<'_>, lines: &mut Lines<'_>) -> Result<Finished, Fatal> {
    let mut setup = Setup::new(&doc.text("schema"), &doc.text("type"), doc.value("live"))?;
    let mut state = State::new(&mut setup);
    for (i, op) in doc.ops(0) {
        state.run_and_send(i, op, lines);
    }
    lines.wait();
    let (live, managers) = state.end();
    Ok(Finished { _setup: setup, _live: live, _managers: managers })
}

/// The writer as the ops see it: where lines go, and each line back once written.
///
/// A line comes back to be dropped here, on the thread that made it: memory freed from another
/// thread goes back to its pages only lazily (mimalloc abandons a page a foreign thread frees
/// into rather than reclaiming it), so each line's few small blocks (its managers' names) freed
/// by the writer kept whole pages of this thread's objects from being reused, and a 10,000-item
/// replay in random order peaked 16 MiB higher.
struct Lines<'c> {
    to_write: &'c mpsc::SyncSender<Line>,
    written: &'c mpsc::Receiver<Line>,
    /// Lines sent and not yet back.
    pending: usize,
}

impl Lines<'_> {
    fn send(&mut self, line: Line) {
        // The writer stops only when the ops do.
        if self.to_write.send(line).is_ok() {
            self.pending += 1;
        }
    }

    /// Waits until every line sent is back (written), dropping them.
    fn wait(&mut self) {
        self.wait_until(0);
    }

    /// Waits until at most `left` lines sent are not back, dropping those back (lines come back
    /// in the order sent).
    fn wait_until(&mut self, left: usize) {
        while self.pending > left && self.written.recv().is_ok() {
            self.pending -= 1;
        }
    }
}

/// What a scenario's ops run with: its schema, root type and initial object.
struct Setup {
    schema: Schema,
    root: TypeRef,
    live: Value,
}

impl Setup {
    fn new(schema_text: &str, type_name: &str, live: Option<Value>) -> Result<Setup, Fatal> {
        let schema = parse_smd_yaml(schema_text).map_err(|e| Fatal(format!("bad schema: {e}")))?;
        let root = schema.named(type_name).ok_or_else(|| Fatal(format!("unknown root type {type_name:?}")))?;
        let live = match live {
            Some(v) => {
                Updater::new(&schema, &root).validate(&v).map_err(|e| Fatal(format!("invalid initial live object: {e}")))?;
                v
            }
            None => json!({}),
        };
        Ok(Setup { schema, root, live })
    }
}

/// The ops' state between ops: the object and its managers.
struct State<'s> {
    /// Each op's object is validated within its merge or comparison (one walk, not two).
    updater: Updater<'s>,
    live: Arc<Value>,
    managers: ManagedFields,
}

impl<'s> State<'s> {
    /// The state before the first op: `setup`'s initial object (taken) and no managers.
    fn new(setup: &'s mut Setup) -> Self {
        let Setup { schema, root, live } = setup;
        State { updater: Updater::new(schema, root).validating(), live: Arc::new(std::mem::take(live)), managers: ManagedFields::new() }
    }

    /// Runs op `i` and sends its line. The object it replaced is dropped here, once the lines
    /// before (the ones showing it) have come back from the writer, while this op's line is
    /// written: its memory goes back to this thread's allocator before the next op is parsed
    /// (see [`Lines`]), not whenever the writer lets go of it.
    fn run_and_send(&mut self, i: usize, op: Value, lines: &mut Lines<'_>) {
        let (line, replaced) = run_op(i, &self.updater, &mut self.live, &mut self.managers, op);
        lines.send(line);
        if replaced.is_some() {
            lines.wait_until(1);
        }
        drop(replaced);
    }

    /// Runs the first op, whose line is sent later (see [`run`]): no line shows the object it
    /// replaces.
    fn run_first(&mut self, op: Value) -> Line {
        run_op(0, &self.updater, &mut self.live, &mut self.managers, op).0
    }

    /// The object and managers the ops ended with.
    fn end(self) -> (Arc<Value>, ManagedFields) {
        (self.live, self.managers)
    }
}

/// One op's line, handed to the writer thread.
enum Line {
    /// The line of an op that failed, written.
    Failed(Vec<u8>),
    /// An op that succeeded: what its line shows.
    Done { i: usize, changed: Option<bool>, object: Arc<Value>, managers: ManagedFields },
}

impl Line {
    fn write(&self, out: &mut Pieces<'_>) {
        match self {
            Line::Failed(text) => out.bytes(text),
            Line::Done { i, changed, object, managers } => {
                success_line(out, *i, *changed, object, managers);
            }
        }
    }
}

/// The output, handed on in pieces of about [`Pieces::SIZE`] bytes as it is written.
struct Pieces<'f> {
    buf: Vec<u8>,
    write: &'f mut dyn FnMut(&[u8]),
    /// Where a manager's FieldsV1 text is written before it is handed on (a piece at a time),
    /// kept from line to line.
    fields: String,
}

impl Pieces<'_> {
    const SIZE: usize = 64 * 1024;

    fn bytes(&mut self, b: &[u8]) {
        if self.buf.len() + b.len() > Self::SIZE {
            self.hand_on();
            if b.len() >= Self::SIZE {
                // Large enough to go on as it is.
                (self.write)(b);
                return;
            }
        }
        self.buf.extend_from_slice(b);
    }

    fn hand_on(&mut self) {
        if !self.buf.is_empty() {
            (self.write)(&self.buf);
            self.buf.clear();
        }
    }
}

impl std::io::Write for Pieces<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.bytes(b);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn error_line(i: usize, msg: &str) -> Line {
    failed_line(&json!({"op": i, "ok": false, "error": msg}))
}

fn failed_line(v: &Value) -> Line {
    // Writing JSON values into a vector cannot fail: map keys are strings.
    Line::Failed(serde_json::to_vec(v).unwrap_or_default())
}

fn write_json(out: &mut Pieces<'_>, v: &(impl serde::Serialize + ?Sized)) {
    // Writing JSON values and strings into `Pieces` cannot fail: map keys are strings, its writes
    // infallible.
    let _ = serde_json::to_writer(out, v);
}

/// Runs one op on `live` and `managers`, answering its line and the object it replaced.
fn run_op(
    i: usize,
    updater: &Updater<'_>,
    live: &mut Arc<Value>,
    managers: &mut ManagedFields,
    mut op: Value,
) -> (Line, Option<Arc<Value>>) {
    let text = |key: &str| op.get(key).and_then(Value::as_str).unwrap_or("").to_string();
    let version = Some(text("apiVersion")).filter(|v| !v.is_empty()).unwrap_or_else(|| "v1".to_string());
    let (manager, kind) = (text("manager"), text("op"));
    let force = op.get("force").and_then(Value::as_bool).unwrap_or(false);
    let Some(object) = op.as_object_mut().and_then(|m| m.remove("object")) else {
        return (error_line(i, "bad object JSON: EOF"), None);
    };
    let (new_object, new_managers, changed) = match kind.as_str() {
        "apply" => {
            let key = ManagerKey::apply(&manager);
            // The owned config's parts are moved into the object, as a server applying a
            // request body does.
            match updater.apply_owned(live, object, &version, managers.clone(), &key, force) {
                Ok(a) => (a.object, a.managers, Some(a.changed)),
                Err(e) => return (failure(i, e), None),
            }
        }
        "update" => {
            let key = ManagerKey::update(&manager, &version);
            match updater.update(live, &object, &version, managers.clone(), &key) {
                Ok(m) => (Some(object), m, None),
                Err(e) => return (failure(i, e), None),
            }
        }
        other => return (error_line(i, &format!("unknown op {other:?}")), None),
    };
    let replaced = new_object.map(|object| std::mem::replace(live, Arc::new(object)));
    *managers = new_managers;
    (Line::Done { i, changed, object: Arc::clone(live), managers: managers.clone() }, replaced)
}

fn failure(i: usize, e: Error) -> Line {
    match e {
        Error::Conflict(c) => {
            // Regroup the conflicts into one set per manager, then list each set's paths the way
            // structured-merge-diff v4.1.2 lists them (see `smd_iterate`).
            let mut per_manager: BTreeMap<&ManagerKey, Vec<Path>> = BTreeMap::new();
            for c in &c.0 {
                per_manager.entry(&c.manager).or_default().push(c.path.clone());
            }
            let mut list: Vec<(String, &'static str, String)> = Vec::new();
            for (m, paths) in per_manager {
                for p in smd_iterate(&Set::from_paths(&paths)) {
                    list.push((m.manager.clone(), m.operation.as_str(), p.to_string()));
                }
            }
            list.sort();
            let conflicts: Vec<Value> = list.into_iter().map(|(m, o, p)| json!({"manager": m, "operation": o, "path": p})).collect();
            failed_line(&json!({"op": i, "ok": false, "conflicts": conflicts}))
        }
        Error::Invalid(e) => error_line(i, &format!("invalid object: {e}")),
        other => error_line(i, &other.to_string()),
    }
}

fn success_line(out: &mut Pieces<'_>, i: usize, changed: Option<bool>, object: &Value, managers: &ManagedFields) {
    // Sorted as the oracle sorts them; (manager, operation, apiVersion) is unique in a replay (no
    // subresources), so no entry's fields take part.
    let mut entries: Vec<(&str, &str, &str, &Set)> =
        managers.iter().map(|(k, vs)| (k.manager.as_str(), op_str(k.operation), vs.api_version.as_str(), &vs.set)).collect();
    entries.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
    out.bytes(format!("{{\"op\":{i},\"ok\":true").as_bytes());
    if let Some(c) = changed {
        out.bytes(format!(",\"changed\":{c}").as_bytes());
    }
    out.bytes(b",\"object\":");
    write_json(out, object);
    out.bytes(b",\"managedFields\":[");
    let mut fields = std::mem::take(&mut out.fields);
    for (n, (m, o, v, set)) in entries.iter().enumerate() {
        if n > 0 {
            out.bytes(b",");
        }
        out.bytes(b"{\"manager\":");
        write_json(out, *m);
        out.bytes(format!(",\"operation\":\"{o}\",\"apiVersion\":").as_bytes());
        write_json(out, *v);
        out.bytes(b",\"fieldsV1\":");
        fields.clear();
        // A large set's text is handed on in pieces too, as it is written.
        fields_v1::write_json_string_in_pieces(set, &mut fields, Pieces::SIZE, &mut |piece| out.bytes(piece.as_bytes()));
        out.bytes(fields.as_bytes());
        out.bytes(b"}");
    }
    out.fields = fields;
    out.bytes(b"]}");
}

fn op_str(o: Operation) -> &'static str {
    o.as_str()
}

/// The paths of `set` as structured-merge-diff v4.1.2's `Set.Iterate` hands them out when they are
/// kept (as `ConflictsFromManagers` keeps them): each path is `append(prefix, element)` on a Go
/// slice, so paths built from a prefix that still had spare capacity share its backing array, and
/// every one of them ends up showing whatever was appended there last. Conflicts on sibling
/// fields can thus print as one path repeated. The engine's own [`crate::Conflicts`] carry the
/// true paths; only this replay, whose purpose is to print what the oracle prints, reproduces the
/// aliasing (engine/DIFFERENCES.md).
fn smd_iterate(set: &Set) -> Vec<Path> {
    /// A Go slice of path elements: a backing array (index into the arena), length, capacity.
    #[derive(Clone, Copy)]
    struct Slice {
        array: Option<usize>,
        len: usize,
        cap: usize,
    }
    fn append(arena: &mut Vec<Vec<PathElement>>, s: Slice, pe: &PathElement) -> Slice {
        if let Some(a) = s.array.filter(|_| s.len < s.cap) {
            // Room left: write in place, shared with every other slice of this array.
            let arr = &mut arena[a];
            if arr.len() > s.len {
                arr[s.len] = pe.clone();
            } else {
                arr.push(pe.clone());
            }
            return Slice { array: Some(a), len: s.len + 1, cap: s.cap };
        }
        // growslice for 32-byte elements below 256: double (from 0 to 1); sizes are exact classes.
        let cap = if s.cap == 0 { 1 } else { s.cap * 2 };
        let mut arr: Vec<PathElement> = s.array.map(|a| arena[a][..s.len].to_vec()).unwrap_or_default();
        arr.push(pe.clone());
        arena.push(arr);
        Slice { array: Some(arena.len() - 1), len: s.len + 1, cap }
    }
    fn walk(set: &Set, prefix: Slice, arena: &mut Vec<Vec<PathElement>>, out: &mut Vec<Slice>) {
        for m in set.members() {
            let p = append(arena, prefix, m);
            out.push(p);
        }
        for (pe, child) in set.children() {
            let p = append(arena, prefix, pe);
            walk(child, p, arena, out);
        }
    }
    let mut arena = Vec::new();
    let mut out = Vec::new();
    walk(set, Slice { array: None, len: 0, cap: 0 }, &mut arena, &mut out);
    out.into_iter().map(|s| Path(s.array.map(|a| arena[a][..s.len].to_vec()).unwrap_or_default())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHEMA: &str = "types:\n- name: root\n  map:\n    fields:\n    - name: a\n      type:\n        scalar: string\n";

    fn apply(manager: &str, a: &str) -> Value {
        json!({"op": "apply", "manager": manager, "object": {"a": a}})
    }

    #[test]
    fn members_are_read_in_any_order_and_the_last_repeated_one_wins() {
        let schema = Value::String(SCHEMA.into());
        let text =
            format!(r#"{{"ops":[{}],"type":"root","schema":{schema},"ops":[{},{}]}}"#, apply("m", "x"), apply("m", "y"), apply("n", "z"));
        let doc = Document::read(&text, None).unwrap();
        assert_eq!(doc.text("schema"), SCHEMA);
        assert_eq!(doc.text("type"), "root");
        assert_eq!(doc.ops(0).collect::<Vec<_>>(), [(0, apply("m", "y")), (1, apply("n", "z"))]);
        assert_eq!(doc.ops(1).collect::<Vec<_>>(), [(1, apply("n", "z"))]);
        // `ops` of another kind is no ops; valid JSON of another kind has no members.
        assert_eq!(Document::read(r#"{"ops":{"a":1},"type":"root"}"#, None).unwrap().ops(0).count(), 0);
        assert_eq!(Document::read("[1,2]", None).unwrap().text("type"), "");
        assert!(Document::read(r#"{"ops":[1,"#, None).err().unwrap().0.starts_with("bad scenario JSON: "));
    }

    /// The replay's lines, or its fatal error, and whether anything was written before it.
    fn lines_or_fatal(text: &str) -> (Result<Vec<Value>, Fatal>, bool) {
        let mut written = Vec::new();
        let r = replay_each(text, |piece| written.extend_from_slice(piece));
        let lines =
            r.map(|_finished| String::from_utf8(written.clone()).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect());
        (lines, !written.is_empty())
    }

    #[test]
    fn the_first_op_runs_ahead_only_on_members_that_stand() {
        let schema = Value::String(SCHEMA.into());
        let (x, y) = (apply("m", "x"), apply("n", "y"));
        // Members before the ops: the first op ran ahead, and the lines are those of its run.
        let (lines, _) = lines_or_fatal(&format!(r#"{{"schema":{schema},"type":"root","ops":[{x},{y}]}}"#));
        let lines = lines.unwrap();
        assert_eq!((lines[0]["changed"].clone(), lines[1]["conflicts"][0]["path"].clone()), (json!(true), json!(".a")));
        // An initial object after the ops: the first op runs again on it (nothing changes).
        let (lines, _) = lines_or_fatal(&format!(r#"{{"schema":{schema},"type":"root","ops":[{x}],"live":{{"a":"x"}}}}"#));
        assert_eq!(lines.unwrap()[0]["changed"], json!(false));
        // A type after the ops that is not in the schema: the scenario's error, nothing written.
        let (lines, written) = lines_or_fatal(&format!(r#"{{"schema":{schema},"type":"root","ops":[{x}],"type":"nope"}}"#));
        assert_eq!((lines.err(), written), (Some(Fatal("unknown root type \"nope\"".into())), false));
        // A schema that does not parse, then one that does: the ops run on the last.
        let (lines, _) = lines_or_fatal(&format!(r#"{{"schema":"- [","type":"root","ops":[{x}],"schema":{schema}}}"#));
        assert_eq!(lines.unwrap()[0]["object"], json!({"a": "x"}));
        // A schema that does not parse, standing: the scenario's error.
        let (lines, written) = lines_or_fatal(&format!(r#"{{"schema":"- [","type":"root","ops":[{x}]}}"#));
        assert!(lines.err().unwrap().0.starts_with("bad schema: ") && !written);
        // Ops repeated: the last ones run.
        let (lines, _) = lines_or_fatal(&format!(r#"{{"schema":{schema},"type":"root","ops":[{x}],"ops":[{y}]}}"#));
        assert_eq!(lines.unwrap()[0]["managedFields"][0]["manager"], json!("n"));
        // A document that is not JSON after the first op: its error, nothing written.
        let (lines, written) = lines_or_fatal(&format!(r#"{{"schema":{schema},"type":"root","ops":[{x},{y}],"#));
        assert!(lines.err().unwrap().0.starts_with("bad scenario JSON: ") && !written);
    }

    #[test]
    fn an_op_too_deep_to_parse_is_its_own_error_wherever_it_stands() {
        // Deeper than `serde_json` parses a value: the document still reads (its ops as text),
        // and that op answers an error line, first or not.
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let schema = Value::String(SCHEMA.into());
        for (ops, bad) in [(format!("[{deep},{}]", apply("m", "x")), 0), (format!("[{},{deep}]", apply("m", "x")), 1)] {
            let text = format!(r#"{{"schema":{schema},"type":"root","ops":{ops}}}"#);
            let lines: Vec<Value> = replay(&text).unwrap().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert_eq!(lines.len(), 2);
            assert_eq!(lines[bad], json!({"op": bad, "ok": false, "error": "bad object JSON: EOF"}));
            assert_eq!(lines[1 - bad]["object"], json!({"a": "x"}));
        }
    }

    #[test]
    fn the_output_is_handed_on_in_pieces_as_the_ops_run() {
        let sc = json!({"schema": SCHEMA, "type": "root", "ops": [apply("m", "x"), apply("n", "y"), 5]}).to_string();
        let lines: Vec<Value> = replay(&sc).unwrap().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["object"], json!({"a": "x"}));
        assert_eq!(lines[1]["conflicts"], json!([{"manager": "m", "operation": "Apply", "path": ".a"}]));
        assert_eq!(lines[2], json!({"op": 2, "ok": false, "error": "bad object JSON: EOF"}));
        // More output than a piece: several pieces, none over the size but a single large write,
        // together the lines.
        let big = "v".repeat(Pieces::SIZE / 4);
        let ops: Vec<Value> = (0..12).map(|i| apply("m", &format!("{big}{i}"))).collect();
        let sc = json!({"schema": SCHEMA, "type": "root", "ops": ops}).to_string();
        let mut pieces = Vec::new();
        replay_each(&sc, |piece| pieces.push(piece.to_vec())).unwrap();
        assert!(pieces.len() > 2, "{} pieces", pieces.len());
        assert!(pieces.iter().all(|p| p.len() <= Pieces::SIZE));
        let text = String::from_utf8(pieces.concat()).unwrap();
        assert_eq!(text.lines().collect::<Vec<_>>(), replay(&sc).unwrap());
        assert_eq!(text.lines().count(), 12);
    }
}
