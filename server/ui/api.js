// fieldstore web view: talking to the HTTP API of the listener that served this page.
// The bearer token (asked for when the server answers 401) lives in this tab's sessionStorage
// only: it is gone when the tab closes and never reaches another origin.
"use strict";

const FS = (window.FS = window.FS || {});

const TOKEN_KEY = "fieldstore.token";

/** An error answer of the API: its Kubernetes Status. */
class ApiError extends Error {
  constructor(status, body) {
    super((body && body.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}
FS.ApiError = ApiError;

function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch (_) {
    return FS._token || "";
  }
}

function setToken(t) {
  FS._token = t;
  try {
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch (_) {
    /* storage refused: the token stays in memory */
  }
}
FS.setToken = setToken;

let tokenAsked = null;

/** Shows the token dialog; resolves once the user gave a token (rejects on cancel). */
function askToken(message) {
  if (tokenAsked) return tokenAsked;
  const dlg = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  document.getElementById("token-message").textContent = message || "This server requires a bearer token.";
  input.value = "";
  tokenAsked = new Promise((resolve, reject) => {
    // The answer is the form's submit or the dialog's cancel (see confirmDialog in pages.js).
    const form = dlg.querySelector("form");
    const finish = (ok) => {
      form.removeEventListener("submit", onSubmit);
      dlg.removeEventListener("cancel", onCancel);
      tokenAsked = null;
      if (ok && input.value.trim()) {
        setToken(input.value.trim());
        resolve();
      } else {
        reject(new ApiError(401, { message: "no token given" }));
      }
    };
    const onSubmit = (e) => finish(!!e.submitter && e.submitter.value === "ok");
    const onCancel = () => finish(false);
    form.addEventListener("submit", onSubmit);
    dlg.addEventListener("cancel", onCancel);
  });
  dlg.showModal();
  input.focus();
  return tokenAsked;
}
FS.askToken = askToken;

function headers(extra) {
  const h = Object.assign({ Accept: "application/json" }, extra || {});
  const t = token();
  if (t) h.Authorization = "Bearer " + t;
  return h;
}

/** A request to the API; on 401 asks for a token and tries again. JSON in, JSON out. */
async function request(path, opts) {
  opts = opts || {};
  for (let attempt = 0; ; attempt++) {
    const init = { method: opts.method || "GET", headers: headers(opts.headers), signal: opts.signal };
    if (opts.body !== undefined) {
      init.body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
      init.headers["Content-Type"] = opts.contentType || "application/json";
    }
    const r = await fetch(path, init);
    if (r.status === 401 && attempt < 3) {
      const body = await r.json().catch(() => null);
      await askToken(token() ? "That token was refused: " + ((body && body.message) || "Unauthorized") : null);
      continue;
    }
    const text = await r.text();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch (_) {
      body = { message: text };
    }
    if (!r.ok) throw new ApiError(r.status, body);
    return body;
  }
}
FS.get = (path, signal) => request(path, { signal });
FS.post = (path, body) => request(path, { method: "POST", body });
FS.patch = (path, body, contentType) => request(path, { method: "PATCH", body, contentType });

/**
 * A watch as a streamed fetch: calls onEvent with each `{type, object}` line until the stream
 * ends or `signal` aborts. Resolves when it ends.
 */
async function watch(path, signal, onEvent) {
  const r = await fetch(path, { headers: headers(), signal });
  if (r.status === 401) {
    await askToken(null);
    return watch(path, signal, onEvent);
  }
  if (!r.ok || !r.body) throw new ApiError(r.status, await r.json().catch(() => null));
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onEvent(JSON.parse(line));
    }
  }
}
FS.watch = watch;

// ---- types and paths ----

/**
 * A resource type as discovery lists it: key `group/version/plural` (`v1/configmaps` for the
 * core group), kind, namespaced.
 */
FS.types = null;

async function loadTypes() {
  if (FS.types) return FS.types;
  const out = [];
  const add = (group, version, list) => {
    for (const r of (list && list.resources) || []) {
      if (r.name.includes("/") || !(r.verbs || []).includes("list")) continue;
      out.push({
        key: (group ? group + "/" : "") + version + "/" + r.name,
        group,
        version,
        plural: r.name,
        kind: r.kind,
        namespaced: !!r.namespaced,
      });
    }
  };
  const core = await FS.get("/api");
  const groups = await FS.get("/apis");
  const lists = [];
  for (const v of (core && core.versions) || []) lists.push(FS.get("/api/" + v).then((l) => add("", v, l)));
  for (const g of (groups && groups.groups) || []) {
    const v = (g.preferredVersion || (g.versions || [])[0] || {}).version;
    if (!v) continue;
    lists.push(FS.get(`/apis/${g.name}/${v}`).then((l) => add(g.name, v, l)).catch(() => {}));
  }
  await Promise.all(lists);
  out.sort((a, b) => a.kind.localeCompare(b.kind) || a.group.localeCompare(b.group));
  FS.types = out;
  return out;
}
FS.loadTypes = loadTypes;

/** The type with `key` (`apps/v1/deployments`), or one whose plural or kind is `key`. */
FS.findType = (key) => {
  const k = String(key || "").toLowerCase();
  return (FS.types || []).find((t) => t.key === key) || (FS.types || []).find((t) => t.plural === k || t.kind.toLowerCase() === k);
};

/** The resource name the owner index takes: `plural` or `plural.group`. */
FS.resourceName = (t) => (t.group ? `${t.plural}.${t.group}` : t.plural);

/** The collection path of a type, in a namespace or across all. */
FS.collectionPath = (t, ns) => {
  const base = t.group ? `/apis/${t.group}/${t.version}` : `/api/${t.version}`;
  return t.namespaced && ns ? `${base}/namespaces/${encodeURIComponent(ns)}/${t.plural}` : `${base}/${t.plural}`;
};

/** The path of one object. */
FS.objectPath = (t, ns, name) => FS.collectionPath(t, t.namespaced ? ns : "") + "/" + encodeURIComponent(name);

/** Whether the caller may do `verb` (store-wide unless a resource is given). */
FS.may = async (verb, resource) => {
  try {
    const q = new URLSearchParams({ verb });
    if (resource) q.set("resource", resource);
    const r = await FS.get("/apis/fieldstore.io/v1/access?" + q);
    return !!(r && r.allowed);
  } catch (_) {
    return false;
  }
};
