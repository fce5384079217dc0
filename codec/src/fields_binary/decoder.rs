//! The decoder: a stack machine over the binary form, with every limit and inconsistency checked.

use super::*;

/// Parses a binary FieldsV1 document (see [`super::decode()`]).
pub(super) fn decode(bytes: &[u8]) -> Result<Set> {
    Decoder { input: bytes, pos: 0, pending: 0, table: Vec::new(), key_fields: Vec::new() }.decode()
}

/// One trie node being decoded: what it has so far and how many members and children remain.
struct Frame {
    /// The element under which the finished node goes into its parent (`None` for the root).
    element: Option<PathElement>,
    members: Vec<PathElement>,
    children: Vec<(PathElement, Set)>,
    members_left: usize,
    children_left: usize,
    /// Where this node's header starts.
    start: usize,
    /// The byte range of the sub-node of this node's latest child entry.
    last_child: Option<(usize, usize)>,
    /// Whether the latest entry was a child (else a member, or no entry yet).
    last_was_child: bool,
    /// Whether every entry so far came after the one before it, in [`PathElement`] order.
    in_order: bool,
}

impl Frame {
    /// Notes that the next entry is `pe`, checking that it follows the previous entry.
    #[inline]
    fn follow(&mut self, pe: &PathElement, child: bool) {
        let previous = if self.last_was_child { self.children.last().map(|c| &c.0) } else { self.members.last() };
        if previous.is_some_and(|p| p >= pe) {
            self.in_order = false;
        }
        self.last_was_child = child;
    }

    /// The finished node, with the element it goes under in its parent and where it started.
    /// Entries were checked in order as they came, so only a node whose entries were out of
    /// order is sorted.
    fn finish(self) -> (Option<PathElement>, usize, Set) {
        let set =
            if self.in_order { Set::from_ordered_parts(self.members, self.children) } else { Set::from_parts(self.members, self.children) };
        (self.element, self.start, set)
    }
}

/// A list or map being decoded.
enum Container {
    List { items: Vec<Value>, left: usize },
    Map { map: Map<String, Value>, left: usize, key: Option<String> },
}

struct Decoder<'a> {
    input: &'a [u8],
    pos: usize,
    /// Items promised by the counts of open nodes, keys, lists and maps but not started yet;
    /// each needs at least one more input byte, so a new count may claim only what is left.
    pending: usize,
    table: Vec<Name>,
    /// Scratch space for the fields of the key being read.
    key_fields: Vec<(Name, Value)>,
}

impl<'a> Decoder<'a> {
    fn error_at(&self, offset: usize, reason: &str) -> Error {
        Error::FieldsBinary { offset, reason: reason.to_string() }
    }

    fn error(&self, reason: &str) -> Error {
        self.error_at(self.pos, reason)
    }

    #[inline]
    fn byte(&mut self) -> Result<u8> {
        match self.input.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                Ok(b)
            }
            None => Err(self.error("unexpected end of input")),
        }
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let input: &'a [u8] = self.input;
        match self.pos.checked_add(n).and_then(|end| input.get(self.pos..end)) {
            Some(bytes) => {
                self.pos += n;
                Ok(bytes)
            }
            None => Err(self.error("length runs past the end of input")),
        }
    }

    #[inline]
    fn varint(&mut self) -> Result<u64> {
        let start = self.pos;
        let first = self.byte()?;
        if first < 0x80 {
            return Ok(u64::from(first));
        }
        let mut v = u64::from(first & 0x7f);
        let mut shift = 7;
        loop {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(self.error_at(start, "varint overflows 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
            shift += 7;
        }
    }

    /// A varint giving a length or count, as `usize`.
    fn length(&mut self) -> Result<usize> {
        let at = self.pos;
        let v = self.varint()?;
        usize::try_from(v).map_err(|_| self.error_at(at, "length does not fit in memory"))
    }

    /// Accepts `n` promised items if the input left could still hold them, one byte each.
    fn claim(&mut self, n: usize, at: usize) -> Result<()> {
        let room = self.input.len().saturating_sub(self.pos).saturating_sub(self.pending);
        if n > room {
            return Err(self.error_at(at, "count exceeds what the remaining input can hold"));
        }
        self.pending += n;
        Ok(())
    }

    /// Marks `n` promised items as started.
    #[inline]
    fn start(&mut self, n: usize) {
        self.pending = self.pending.saturating_sub(n);
    }

    fn utf8(&self, bytes: &'a [u8], at: usize) -> Result<&'a str> {
        std::str::from_utf8(bytes).map_err(|_| self.error_at(at, "string is not valid UTF-8"))
    }

    fn table_name(&self, i: usize, at: usize) -> Result<Name> {
        match self.table.get(i) {
            Some(s) => Ok(Name::clone(s)),
            None => Err(self.error_at(at, "string table index out of range")),
        }
    }

    fn table_string(&self, i: usize, at: usize) -> Result<String> {
        self.table_name(i, at).map(|s| String::from(&*s))
    }

    /// A string reference: a table index, or an inline string.
    fn string_or_index(&mut self) -> Result<std::result::Result<usize, &'a str>> {
        let at = self.pos;
        let r = self.varint()?;
        let n = usize::try_from(r >> 1).map_err(|_| self.error_at(at, "length does not fit in memory"))?;
        if r & 1 == 0 {
            return Ok(Ok(n));
        }
        let bytes = self.take(n)?;
        Ok(Err(self.utf8(bytes, at)?))
    }

    /// A string reference read as a field name (shared with the table when it is there).
    fn name_ref(&mut self) -> Result<Name> {
        let at = self.pos;
        match self.string_or_index()? {
            Ok(i) => self.table_name(i, at),
            Err(s) => Ok(Name::from(s)),
        }
    }

    /// A string reference read as an owned string (a map key or a string value).
    fn string_ref(&mut self) -> Result<String> {
        let at = self.pos;
        match self.string_or_index()? {
            Ok(i) => self.table_string(i, at),
            Err(s) => Ok(s.to_owned()),
        }
    }

    fn decode(mut self) -> Result<Set> {
        if self.input.get(..MAGIC.len()) != Some(&MAGIC[..]) {
            return Err(self.error("missing FSB magic"));
        }
        self.pos = MAGIC.len();
        if self.byte()? != VERSION {
            return Err(self.error_at(MAGIC.len(), "unsupported version"));
        }
        self.read_table()?;
        let mut stack = vec![self.node(None)?];
        loop {
            let Some(top) = stack.last_mut() else {
                return Err(self.error("node stack underflow"));
            };
            if top.members_left == 0 && top.children_left == 0 {
                let Some(done) = stack.pop() else {
                    return Err(self.error("node stack underflow"));
                };
                let (element, start, set) = done.finish();
                match (element, stack.last_mut()) {
                    (Some(pe), Some(parent)) => {
                        parent.children.push((pe, set));
                        parent.last_child = Some((start, self.pos));
                    }
                    _ => break self.finish(set),
                }
                continue;
            }
            let at = self.pos;
            let header = self.byte()?;
            let shape = (header >> 2) & 3;
            let (member, child) = match shape {
                SHAPE_MEMBER => (true, false),
                SHAPE_BOTH => (true, true),
                SHAPE_CHILDREN => (false, true),
                _ => return Err(self.error_at(at, "invalid entry shape")),
            };
            if (member && top.members_left == 0) || (child && top.children_left == 0) {
                return Err(self.error_at(at, "more entries than the node header announced"));
            }
            top.members_left -= usize::from(member);
            top.children_left -= usize::from(child);
            self.start(usize::from(member) + usize::from(child));
            let pe = self.element(header, at)?;
            top.follow(&pe, child);
            if !child {
                top.members.push(pe);
                continue;
            }
            if member {
                top.members.push(pe.clone());
            }
            // Sibling sub-trees are often byte-identical (list items owning the same fields):
            // identical bytes decode to an identical set, so share the previous one (a set's
            // clone shares its nodes) instead of decoding it again.
            if let Some((a, b)) = top.last_child {
                let input: &[u8] = self.input;
                let same = b.checked_sub(a).and_then(|len| input.get(self.pos..self.pos.checked_add(len)?)) == input.get(a..b);
                if let (true, Some((_, previous))) = (same, top.children.last()) {
                    let set = previous.clone();
                    top.children.push((pe, set));
                    self.pos += b - a;
                    continue;
                }
            }
            if stack.len() >= MAX_PATH_DEPTH {
                return Err(self.error_at(at, "paths nest deeper than MAX_PATH_DEPTH"));
            }
            let frame = self.node(Some(pe))?;
            stack.push(frame);
        }
    }

    fn finish(&self, set: Set) -> Result<Set> {
        if self.pos != self.input.len() {
            return Err(self.error("trailing bytes after the root node"));
        }
        Ok(set)
    }

    fn read_table(&mut self) -> Result<()> {
        let at = self.pos;
        let n = self.length()?;
        self.claim(n, at)?;
        self.table.reserve_exact(n);
        for _ in 0..n {
            self.start(1);
            let at = self.pos;
            let len = self.length()?;
            if len > MAX_INTERNED_LEN {
                return Err(self.error_at(at, "string table entry longer than MAX_INTERNED_LEN"));
            }
            let bytes = self.take(len)?;
            let s = self.utf8(bytes, at)?;
            self.table.push(Name::from(s));
        }
        Ok(())
    }

    /// Reads a node header and opens the node.
    fn node(&mut self, element: Option<PathElement>) -> Result<Frame> {
        let at = self.pos;
        let members_left = self.length()?;
        let children_left = self.length()?;
        let total = members_left.checked_add(children_left).ok_or_else(|| self.error_at(at, "node counts overflow"))?;
        self.claim(total, at)?;
        Ok(Frame {
            element,
            members: Vec::with_capacity(members_left),
            children: Vec::with_capacity(children_left),
            members_left,
            children_left,
            start: at,
            last_child: None,
            last_was_child: false,
            in_order: true,
        })
    }

    fn element(&mut self, header: u8, at: usize) -> Result<PathElement> {
        let nibble = header >> 4;
        match header & 3 {
            KIND_FIELD if nibble > 0 => Ok(PathElement::FieldName(self.table_name(usize::from(nibble - 1), at)?)),
            KIND_FIELD => Ok(PathElement::FieldName(self.name_ref()?)),
            KIND_KEY => {
                let count_at = self.pos;
                let n = if nibble > 0 { usize::from(nibble) } else { self.length()? };
                self.claim(n, count_at)?;
                if n == 1 {
                    // The common single-field key, built in place.
                    self.start(1);
                    let name = self.name_ref()?;
                    let v = self.value()?;
                    let key: KeyFields = Arc::new([(name, v)]);
                    return Ok(PathElement::Key(key));
                }
                let mut fields = std::mem::take(&mut self.key_fields);
                fields.clear();
                fields.reserve(n);
                for _ in 0..n {
                    self.start(1);
                    let name_at = self.pos;
                    let name = self.name_ref()?;
                    if fields.last().is_some_and(|(last, _)| *last >= name) {
                        return Err(self.error_at(name_at, "key fields not sorted by name"));
                    }
                    let v = self.value()?;
                    fields.push((name, v));
                }
                // One allocation, of exactly the key's size; the scratch vector is kept.
                let key: KeyFields = fields.drain(..).collect();
                self.key_fields = fields;
                Ok(PathElement::Key(key))
            }
            KIND_VALUE if nibble == 0 => Ok(PathElement::Value(self.value()?)),
            KIND_INDEX if nibble == 0 => {
                let v = self.varint()?;
                Ok(PathElement::Index(unzigzag(v)))
            }
            _ => Err(self.error_at(at, "unexpected nibble in entry header")),
        }
    }

    /// Reads one value; lists and maps are decoded with an explicit stack.
    fn value(&mut self) -> Result<Value> {
        // The common case first: a short inline string, such as the name in an item's key.
        if let Some(&t) = self.input.get(self.pos) {
            if t >= TAG_INLINE_SHORT {
                let at = self.pos;
                self.pos += 1;
                let bytes = self.take(usize::from(t - TAG_INLINE_SHORT))?;
                return Ok(Value::String(self.utf8(bytes, at)?.to_owned()));
            }
        }
        let mut stack: Vec<Container> = Vec::new();
        loop {
            // Start the next item of the innermost open container (for a map, its key first).
            match stack.last_mut() {
                Some(Container::List { left, .. }) => {
                    *left -= 1;
                    self.start(1);
                }
                Some(Container::Map { map, left, key }) => {
                    *left -= 1;
                    self.start(1);
                    let at = self.pos;
                    let k = self.string_ref()?;
                    if map.keys().next_back().is_some_and(|last| *last >= k) {
                        return Err(self.error_at(at, "map keys not sorted"));
                    }
                    *key = Some(k);
                }
                None => {}
            }
            let at = self.pos;
            let tag = self.byte()?;
            let mut v = match tag {
                TAG_NULL => Value::Null,
                TAG_FALSE => Value::Bool(false),
                TAG_TRUE => Value::Bool(true),
                TAG_INT => Value::Number(unzigzag(self.varint()?).into()),
                TAG_UINT => Value::Number(self.varint()?.into()),
                TAG_FLOAT => {
                    let bytes = self.take(8)?;
                    let mut raw = [0u8; 8];
                    raw.copy_from_slice(bytes);
                    match Number::from_f64(f64::from_le_bytes(raw)) {
                        Some(n) => Value::Number(n),
                        None => return Err(self.error_at(at, "float is not finite")),
                    }
                }
                TAG_STRING => Value::String(self.string_ref()?),
                TAG_LIST | TAG_MAP => {
                    let count_at = self.pos;
                    let n = self.length()?;
                    if n > 0 {
                        if stack.len() >= MAX_VALUE_DEPTH {
                            return Err(self.error_at(at, "values nest deeper than MAX_VALUE_DEPTH"));
                        }
                        self.claim(n, count_at)?;
                        stack.push(if tag == TAG_LIST {
                            Container::List { items: Vec::with_capacity(n), left: n }
                        } else {
                            Container::Map { map: Map::new(), left: n, key: None }
                        });
                        continue;
                    }
                    if tag == TAG_LIST {
                        Value::Array(Vec::new())
                    } else {
                        Value::Object(Map::new())
                    }
                }
                t if t >= TAG_INLINE_SHORT => {
                    let bytes = self.take(usize::from(t - TAG_INLINE_SHORT))?;
                    Value::String(self.utf8(bytes, at)?.to_owned())
                }
                t if t >= TAG_TABLE_SHORT => Value::String(self.table_string(usize::from(t - TAG_TABLE_SHORT), at)?),
                _ => return Err(self.error_at(at, "unknown value tag")),
            };
            // Put the value in its container, closing every container it completes.
            loop {
                match stack.last_mut() {
                    None => return Ok(v),
                    Some(Container::List { items, left }) => {
                        items.push(v);
                        if *left > 0 {
                            break;
                        }
                    }
                    Some(Container::Map { map, left, key }) => {
                        map.insert(key.take().unwrap_or_default(), v);
                        if *left > 0 {
                            break;
                        }
                    }
                }
                v = match stack.pop() {
                    Some(Container::List { items, .. }) => Value::Array(items),
                    Some(Container::Map { map, .. }) => Value::Object(map),
                    None => return Err(self.error("value stack underflow")),
                };
            }
        }
    }
}
