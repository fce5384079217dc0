// fieldstore web view: pure rendering helpers — HTML escaping, manager colours, ages, YAML as
// lines that know which field they show, a line diff, and a small SVG chart.
"use strict";

const R = (window.FS.R = {});

const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
/** Text made safe for HTML. */
R.esc = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

/** A tagged template that escapes every interpolated value (arrays are joined; R.raw passes through). */
R.html = (strings, ...values) => {
  let out = strings[0];
  values.forEach((v, i) => {
    out += flat(v) + strings[i + 1];
  });
  return { __html: out };
};
function flat(v) {
  if (v === null || v === undefined || v === false) return "";
  if (Array.isArray(v)) return v.map(flat).join("");
  if (typeof v === "object" && "__html" in v) return v.__html;
  return R.esc(v);
}
R.raw = (s) => ({ __html: s });
R.str = (h) => flat(h);

/**
 * A manager's colour, the same on every page and every load: a hue from a hash of its name, at a
 * lightness where black text keeps a contrast above 7:1. The name is always shown beside it.
 */
R.colour = (manager) => {
  if (!manager) return "transparent";
  let h = 2166136261;
  for (let i = 0; i < manager.length; i++) {
    h ^= manager.charCodeAt(i);
    h = Math.imul(h, 16777619) >>> 0;
  }
  // Twelve well-separated hues (neighbours in the list are far apart on the wheel), then a second
  // lightness, so that the managers of one object rarely look alike.
  const HUES = [210, 30, 120, 290, 0, 170, 55, 250, 90, 330, 190, 15];
  const light = (h >>> 8) % 2 ? 80 : 87;
  return `hsl(${HUES[h % HUES.length]} 70% ${light}%)`;
};

/** A manager's name on its colour. */
R.chip = (manager) =>
  manager
    ? R.html`<span class="chip" style="--c:${R.colour(manager)}">${manager}</span>`
    : R.html`<span class="chip none">—</span>`;

/** How long ago, short (`42s`, `5m`, `3h`, `12d`). */
R.age = (millisOrTime) => {
  const t = typeof millisOrTime === "number" ? millisOrTime : Date.parse(millisOrTime);
  if (!t) return "";
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  if (s < 120) return s + "s";
  if (s < 7200) return Math.floor(s / 60) + "m";
  if (s < 172800) return Math.floor(s / 3600) + "h";
  return Math.floor(s / 86400) + "d";
};

/** A value as one line (JSON, shortened). */
R.short = (v, max) => {
  if (v === undefined) return "∅";
  const s = typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v);
  max = max || 80;
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
};

// ---- YAML ----

const RESERVED = /^(true|false|yes|no|on|off|null|~|y|n)$/i;
const NUMBERISH = /^[-+]?(\.?[0-9]|\.inf|\.nan|0x|0o)/i;

/** Whether a string can be written as a YAML plain scalar and read back as the same string. */
function plain(s) {
  return (
    s !== "" &&
    s === s.trim() &&
    !/^[-?:,[\]{}#&*!|>'"%@`]/.test(s) &&
    !/: | #|:$|[\u0000-\u001f\u007f]/.test(s) &&
    !RESERVED.test(s) &&
    !NUMBERISH.test(s)
  );
}

function scalar(v) {
  if (v === null) return "null";
  if (typeof v === "string") return plain(v) ? v : JSON.stringify(v);
  return String(v);
}

function key(k) {
  return plain(k) ? k : JSON.stringify(k);
}

const ptr = (p, k) => p + "/" + String(k).replace(/~/g, "~0").replace(/\//g, "~1");

/**
 * An object as YAML lines, kubectl's layout: each line `{text, pointer}`, the pointer (RFC 6901)
 * of the field the line starts; a key holding a scalar or an empty collection is one line.
 */
R.yamlLines = (obj) => {
  const out = [];
  const isColl = (v) => v !== null && typeof v === "object";
  const empty = (v) => (Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0);
  const inline = (v) => (Array.isArray(v) ? "[]" : "{}");
  function map(m, indent, p, firstPrefix) {
    let first = true;
    for (const k of Object.keys(m)) {
      const v = m[k];
      const pre = first && firstPrefix !== undefined ? firstPrefix : " ".repeat(indent);
      first = false;
      const cp = ptr(p, k);
      if (isColl(v) && !empty(v)) {
        out.push({ text: pre + key(k) + ":", pointer: cp });
        if (Array.isArray(v)) list(v, indent, cp);
        else map(v, indent + 2, cp);
      } else {
        out.push({ text: pre + key(k) + ": " + (isColl(v) ? inline(v) : scalar(v)), pointer: cp });
      }
    }
  }
  function list(a, indent, p) {
    a.forEach((v, i) => {
      const cp = ptr(p, i);
      const dash = " ".repeat(indent) + "- ";
      if (isColl(v) && !empty(v)) {
        if (Array.isArray(v)) {
          out.push({ text: dash.trimEnd(), pointer: cp });
          list(v, indent + 2, cp);
        } else {
          map(v, indent + 2, cp, dash);
        }
      } else {
        out.push({ text: dash + (isColl(v) ? inline(v) : scalar(v)), pointer: cp });
      }
    });
  }
  if (isColl(obj) && !Array.isArray(obj)) map(obj, 0, "");
  return out;
};

/** The object as YAML text. */
R.yaml = (obj) => R.yamlLines(obj).map((l) => l.text).join("\n");

/** The object without what the views do not show (managedFields). */
R.shown = (obj) => {
  if (!obj || !obj.metadata || !obj.metadata.managedFields) return obj;
  const copy = Object.assign({}, obj, { metadata: Object.assign({}, obj.metadata) });
  delete copy.metadata.managedFields;
  return copy;
};

// ---- diff ----

/**
 * A line diff (Myers' O(ND) algorithm after trimming the common head and tail): a list of
 * `{op: "=" | "-" | "+", a, b}` with the line indexes in `a` and `b`.
 */
R.diff = (a, b) => {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const A = a.slice(head, a.length - tail);
  const B = b.slice(head, b.length - tail);
  const mid = myers(A, B).map((e) => ({ op: e.op, a: e.a === undefined ? undefined : e.a + head, b: e.b === undefined ? undefined : e.b + head }));
  const out = [];
  for (let i = 0; i < head; i++) out.push({ op: "=", a: i, b: i });
  out.push(...mid);
  for (let i = 0; i < tail; i++) out.push({ op: "=", a: a.length - tail + i, b: b.length - tail + i });
  return out;
};

function myers(a, b) {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  if (max === 0) return [];
  // Beyond this many edits fall back to "all removed, all added": still correct, just coarse.
  const limit = Math.min(max, 4000);
  const v = new Int32Array(2 * limit + 2);
  const trace = [];
  let found = -1;
  for (let d = 0; d <= limit && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[limit + k - 1] < v[limit + k + 1]) ? v[limit + k + 1] : v[limit + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[limit + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) {
    return a.map((_, i) => ({ op: "-", a: i })).concat(b.map((_, j) => ({ op: "+", b: j })));
  }
  const out = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vv = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && vv[limit + k - 1] < vv[limit + k + 1]) ? k + 1 : k - 1;
    const prevX = vv[limit + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) out.push({ op: "=", a: --x, b: --y });
    if (x === prevX) out.push({ op: "+", b: --y });
    else out.push({ op: "-", a: --x });
  }
  while (x > 0 && y > 0) out.push({ op: "=", a: --x, b: --y });
  return out.reverse();
}

// ---- chart ----

/**
 * A step chart of numeric values over revisions: points `{revision, value, manager}`, oldest
 * first. Returns SVG markup with a text title and description for screen readers.
 */
R.chart = (points, label) => {
  const W = 420;
  const H = 120;
  const P = 28;
  if (points.length === 0) return R.raw("");
  const revs = points.map((p) => p.revision);
  const vals = points.map((p) => p.value);
  let lo = Math.min(...vals);
  let hi = Math.max(...vals);
  if (lo === hi) {
    lo -= 1;
    hi += 1;
  }
  const r0 = Math.min(...revs);
  const r1 = Math.max(...revs) === r0 ? r0 + 1 : Math.max(...revs);
  const x = (r) => P + ((r - r0) / (r1 - r0)) * (W - 2 * P);
  const y = (v) => H - P + 6 - ((v - lo) / (hi - lo)) * (H - 2 * P);
  let d = "";
  points.forEach((p, i) => {
    d += i === 0 ? `M${x(p.revision)},${y(p.value)}` : `H${x(p.revision)}V${y(p.value)}`;
  });
  d += `H${W - P}`;
  const dots = points
    .map((p) => `<circle cx="${x(p.revision)}" cy="${y(p.value)}" r="4" fill="${R.colour(p.manager)}" stroke="#111"><title>${R.esc(`revision ${p.revision}: ${p.value} by ${p.manager}`)}</title></circle>`)
    .join("");
  const desc = points.map((p) => `revision ${p.revision}: ${p.value}`).join(", ");
  return R.raw(
    `<svg class="chart" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-labelledby="chart-t chart-d">` +
      `<title id="chart-t">${R.esc(label)} over revisions</title><desc id="chart-d">${R.esc(desc)}</desc>` +
      `<line x1="${P}" y1="${H - P + 6}" x2="${W - P}" y2="${H - P + 6}" class="axis"/>` +
      `<text x="2" y="${y(hi) + 4}" class="tick">${R.esc(hi)}</text><text x="2" y="${y(lo) + 4}" class="tick">${R.esc(lo)}</text>` +
      `<text x="${P}" y="${H - 4}" class="tick">rev ${r0}</text><text x="${W - P}" y="${H - 4}" class="tick" text-anchor="end">rev ${Math.max(...revs)}</text>` +
      `<path d="${d}" class="line"/>${dots}</svg>`,
  );
};
