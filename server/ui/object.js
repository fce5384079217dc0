// fieldstore web view: the object page — YAML with a blame gutter and the owners of each field,
// a field's timeline, the object at any revision, a side-by-side diff of two revisions, and live
// updates through a watch.
"use strict";

(() => {
  const { R } = FS;
  const { html, esc } = R;
  const TIMELINE_PAGE = 20;

  /** `#/object?...` with these parameters changed. */
  function link(params, changes) {
    const q = new URLSearchParams(params);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null || v === undefined || v === "") q.delete(k);
      else q.set(k, v);
    }
    return "#/object?" + q;
  }

  FS.pages = FS.pages || {};

  FS.pages.object = async (main, params, signal) => {
    const t = FS.findType(params.get("type"));
    if (!t) throw new Error(`no type ${params.get("type")}`);
    const ns = t.namespaced ? params.get("ns") || "default" : "";
    const name = params.get("name") || "";
    const path = FS.objectPath(t, ns, name);
    const view = params.get("view") || "blame";
    const tab = (v, label) => html`<a href="${link(params, { view: v === "blame" ? "" : v, rev: "", a: "", b: "" })}" ${R.raw(view === v ? 'aria-current="page"' : "")}>${label}</a>`;
    main.innerHTML = R.str(html`
      <nav class="crumbs" aria-label="Breadcrumb"><a href="#/objects?type=${t.key}&ns=${ns}">${t.kind}</a>${ns ? html` <span aria-hidden="true">/</span> ${ns}` : ""} <span aria-hidden="true">/</span> <span>${name}</span></nav>
      <div class="titlebar"><h1>${t.kind} <span class="name">${name}</span></h1>
        <p id="live" class="live" role="status" aria-live="polite">connecting…</p></div>
      <nav class="tabs" aria-label="Views">${tab("blame", "Blame")}${tab("at", "Time travel")}${tab("diff", "Diff")}</nav>
      <div id="view" class="view"></div>`);
    const el = main.querySelector("#view");
    const live = main.querySelector("#live");
    const ctx = { t, ns, name, path, params, el, live, signal, obj: null };
    if (view === "at") await timeTravel(ctx);
    else if (view === "diff") await diffView(ctx);
    else await blameView(ctx);
    startLive(ctx);
  };

  // ---- blame ----

  async function blameView(ctx) {
    const started = performance.now();
    ctx.started = started;
    const [obj, blame] = await Promise.all([FS.get(ctx.path, ctx.signal), FS.get(ctx.path + "/blame", ctx.signal)]);
    document.body.dataset.fetchMs = (performance.now() - started).toFixed(0);
    ctx.obj = obj;
    ctx.el.innerHTML = R.str(html`
      <div class="split">
        <section class="code-wrap" aria-label="Object with blame">
          <p class="hint" id="code-hint">Each line: last writer, operation, age, owners. Arrow keys move, Enter opens the field's timeline.</p>
          <div class="code-head" aria-hidden="true"><span>last writer</span><span>op</span><span>age</span><span>owners</span><span>field</span></div>
          <div id="code" class="code" role="list" aria-describedby="code-hint"></div>
        </section>
        <aside id="field" class="panel" aria-label="Field" tabindex="-1"><p class="hint">Select a line to see the field's owners and timeline.</p></aside>
      </div>`);
    ctx.renderBlame = (obj, blame) => renderBlame(ctx, obj, blame);
    renderBlame(ctx, obj, blame);
    const ms = performance.now() - started;
    document.body.dataset.renderMs = ms.toFixed(0);
    const field = ctx.params.get("field");
    if (field) openField(ctx, field);
  }

  /** Index of the blame: per pointer its line, and per pointer of any ancestor its field path. */
  function indexBlame(blame) {
    const byPointer = new Map();
    const paths = new Map();
    for (const b of blame) {
      byPointer.set(b.pointer, b);
      const segs = b.pointer.split("/").slice(1);
      const elems = pathElements(b.path);
      if (elems.length !== segs.length) continue;
      let p = "";
      let f = "";
      segs.forEach((s, i) => {
        p += "/" + s;
        f += elems[i];
        if (!paths.has(p)) paths.set(p, f);
      });
    }
    return { byPointer, paths };
  }

  /** `.spec.containers[name="a"].image` → [".spec", ".containers", "[name=\"a\"]", ".image"]. */
  function pathElements(path) {
    const out = [];
    let i = 0;
    while (i < path.length) {
      let j = i + 1;
      if (path[i] === "[") {
        let quoted = false;
        while (j < path.length && (quoted || path[j] !== "]")) {
          if (path[j] === "\\" && quoted) j++;
          else if (path[j] === '"') quoted = !quoted;
          j++;
        }
        j++;
      } else {
        while (j < path.length && path[j] !== "." && path[j] !== "[") j++;
      }
      out.push(path.slice(i, j));
      i = j;
    }
    return out;
  }

  /** The blame line of a pointer: its own, or that of the atomic field it is inside. */
  function blameOf(index, pointer) {
    for (let p = pointer; p; p = p.slice(0, p.lastIndexOf("/"))) {
      const b = index.byPointer.get(p);
      if (b) return b;
    }
    return null;
  }

  function renderBlame(ctx, obj, blame) {
    const code = ctx.el.querySelector("#code");
    if (!code) return;
    const lines = R.yamlLines(R.shown(obj));
    const index = indexBlame(blame);
    ctx.index = index;
    ctx.lines = lines;
    // Blocks of lines that the browser lays out only when scrolled into view; the first block is
    // rendered at once, the others in the background, a block per task, so that a large object's
    // page is usable at once.
    const BLOCK = 400;
    const row = (l, i) => {
      const b = blameOf(index, l.pointer);
      const own = b && b.owners.length ? b.owners.join(", ") : "";
      const fieldPath = (b && b.pointer === l.pointer ? b.path : index.paths.get(l.pointer)) || (b && b.path) || "";
      const when = b && b.time ? `${b.time}, revision ${b.revision}` : "";
      return (
        `<div class="ln" role="listitem" tabindex="${i ? -1 : 0}" data-i="${i}" data-pointer="${esc(l.pointer)}" data-path="${esc(fieldPath)}">` +
        `<span class="g-m">${b && b.manager ? `<span class="chip" style="--c:${R.colour(b.manager)}">${esc(b.manager)}</span>` : ""}</span>` +
        `<span class="g-op">${b ? esc(b.operation || "") + (b.subresource ? "/" + esc(b.subresource) : "") : ""}</span>` +
        `<span class="g-age" title="${esc(when)}">${b && b.unixMillis ? R.age(b.unixMillis) : ""}</span>` +
        `<span class="g-own" title="${esc(own)}">${esc(own)}</span>` +
        `<code class="y">${esc(l.text)}</code></div>`
      );
    };
    const block = (from) => {
      const parts = ['<div class="block">'];
      for (let i = from; i < Math.min(lines.length, from + BLOCK); i++) parts.push(row(lines[i], i));
      parts.push("</div>");
      return parts.join("");
    };
    const generation = (ctx.generation = (ctx.generation || 0) + 1);
    code.innerHTML = block(0);
    code.dataset.complete = lines.length <= BLOCK ? "true" : "false";
    const rest = (from) => {
      if (ctx.generation !== generation || ctx.signal.aborted) return;
      if (from >= lines.length) {
        code.dataset.complete = "true";
        document.body.dataset.renderAllMs = (performance.now() - ctx.started).toFixed(0);
        return;
      }
      code.insertAdjacentHTML("beforeend", block(from));
      setTimeout(() => rest(from + BLOCK), 0);
    };
    setTimeout(() => rest(BLOCK), 0);
    if (!code.dataset.wired) {
      code.dataset.wired = "1";
      code.addEventListener("click", (e) => {
        const ln = e.target.closest(".ln");
        if (ln) selectLine(ctx, ln, true);
      });
      code.addEventListener("keydown", (e) => lineKeys(ctx, e));
    }
    if (ctx.selected) {
      const ln = code.querySelector(`.ln[data-pointer="${CSS.escape(ctx.selected)}"]`);
      if (ln) ln.classList.add("sel");
    }
  }

  function lineKeys(ctx, e) {
    const ln = e.target.closest(".ln");
    if (!ln) return;
    const i = Number(ln.dataset.i);
    const n = ctx.lines.length;
    const to = { ArrowDown: i + 1, ArrowUp: i - 1, Home: 0, End: n - 1, PageDown: i + 20, PageUp: i - 20 }[e.key];
    if (to !== undefined) {
      e.preventDefault();
      focusLine(ctx, Math.max(0, Math.min(n - 1, to)));
    } else if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      selectLine(ctx, ln, true);
    }
  }

  function focusLine(ctx, i) {
    const code = ctx.el.querySelector("#code");
    const cur = code.querySelector('.ln[tabindex="0"]');
    const next = code.querySelector(`.ln[data-i="${i}"]`);
    if (!next) return;
    if (cur) cur.tabIndex = -1;
    next.tabIndex = 0;
    next.focus();
  }

  function selectLine(ctx, ln, updateUrl) {
    const path = ln.dataset.path;
    if (!path) return;
    ctx.el.querySelectorAll(".ln.sel").forEach((x) => x.classList.remove("sel"));
    ln.classList.add("sel");
    ctx.selected = ln.dataset.pointer;
    if (updateUrl) history.replaceState(null, "", link(ctx.params, { field: path }));
    openField(ctx, path, ln.dataset.pointer);
  }

  /** The field panel: value, owners, last change, and the timeline of the field and its subtree. */
  async function openField(ctx, path, pointer) {
    const panel = ctx.el.querySelector("#field");
    if (!pointer) {
      for (const [p, f] of ctx.index.paths) if (f === path) pointer = p;
      const ln = pointer && ctx.el.querySelector(`.ln[data-pointer="${CSS.escape(pointer)}"]`);
      if (ln) {
        ln.classList.add("sel");
        ctx.selected = pointer;
        ln.scrollIntoView({ block: "center" });
      }
    }
    const b = pointer ? ctx.index.byPointer.get(pointer) : null;
    panel.innerHTML = R.str(html`
      <h2 class="path"><code>${path}</code></h2>
      ${b ? html`<dl class="facts">
        <dt>value</dt><dd><code>${R.short(b.value, 200)}</code></dd>
        <dt>owners</dt><dd>${b.owners.length ? b.owners.map((o) => html`${R.chip(o)} `) : "none"}</dd>
        <dt>last change</dt><dd>${b.manager ? html`${R.chip(b.manager)} ${b.operation} at revision ${b.revision}, ${b.time}` : "older than the history kept"}</dd>
      </dl>` : html`<p class="hint">A subtree: its timeline lists every change under it.</p>`}
      <h3>Timeline <span class="hint">(newest first; the field and its subtree)</span></h3>
      <div id="chart"></div>
      <table class="timeline"><thead><tr><th scope="col">rev</th><th scope="col">when</th><th scope="col">manager</th><th scope="col">op</th><th scope="col">change</th></tr></thead><tbody id="events"></tbody></table>
      <p><button type="button" id="older" hidden>Older changes</button></p>`);
    const timeline = { path, events: [], before: null };
    ctx.timeline = timeline;
    panel.querySelector("#older").addEventListener("click", () => loadEvents(ctx, timeline));
    await loadEvents(ctx, timeline);
  }

  async function loadEvents(ctx, timeline) {
    const panel = ctx.el.querySelector("#field");
    const q = new URLSearchParams({ path: timeline.path, limit: String(TIMELINE_PAGE) });
    if (timeline.before) q.set("beforeRevision", String(timeline.before));
    const page = await FS.get(`${ctx.path}/history?${q}`, ctx.signal);
    if (ctx.timeline !== timeline) return;
    const events = page.events || [];
    timeline.events.push(...events);
    timeline.before = page.nextBeforeRevision || null;
    const rows = events.map((e) => {
      const change =
        e.change === "added" ? html`added <code>${R.short(e.after)}</code>` : e.change === "removed" ? html`removed <code>${R.short(e.before)}</code>` : html`<code>${R.short(e.before)}</code> → <code>${R.short(e.after)}</code>`;
      return html`<tr data-revision="${e.revision}" data-manager="${e.manager}">
        <td>${e.revision}</td><td title="${e.time}">${R.age(e.unixMillis)} ago</td><td>${R.chip(e.manager)}</td>
        <td>${e.operation}${e.subresource ? "/" + e.subresource : ""}</td>
        <td>${e.path !== timeline.path ? html`<code class="sub">${e.path}</code> ` : ""}${change}${e.note ? html` <em>${e.note}</em>` : ""}</td></tr>`;
    });
    const tbody = panel.querySelector("#events");
    tbody.insertAdjacentHTML("beforeend", R.str(rows));
    if (!timeline.events.length) tbody.innerHTML = '<tr><td colspan="5">No change in the history kept.</td></tr>';
    const older = panel.querySelector("#older");
    older.hidden = !timeline.before;
    // A chart when the field itself holds numbers.
    const own = timeline.events.filter((e) => e.path === timeline.path).reverse();
    const points = [];
    for (const e of own) {
      if (typeof e.after === "number") points.push({ revision: e.revision, value: e.after, manager: e.manager });
    }
    const numeric = own.length > 0 && own.every((e) => e.after === undefined || typeof e.after === "number");
    panel.querySelector("#chart").innerHTML = numeric && points.length ? R.str(R.chart(points, timeline.path)) : "";
  }

  // ---- time travel ----

  async function revisionsOf(ctx) {
    const log = await FS.get(ctx.path + "/log", ctx.signal);
    return log || [];
  }

  function entryLabel(e) {
    return `revision ${e.revision}: ${e.event.toLowerCase()} by ${e.manager || "(delete)"} (${e.operation}), ${e.changedFields} field${e.changedFields === 1 ? "" : "s"}`;
  }

  async function timeTravel(ctx) {
    const log = await revisionsOf(ctx);
    if (!log.length) {
      ctx.el.innerHTML = '<p class="hint">History holds no write of this object.</p>';
      return;
    }
    const asc = log.slice().reverse();
    const want = Number(ctx.params.get("rev")) || asc[asc.length - 1].revision;
    let at = asc.findIndex((e) => e.revision === want);
    if (at < 0) at = asc.length - 1;
    ctx.el.innerHTML = R.str(html`
      <div class="split tt">
        <section aria-label="Revisions" class="revs">
          <label for="slider">Revision <output id="rev-out">${asc[at].revision}</output></label>
          <input id="slider" type="range" min="0" max="${asc.length - 1}" value="${at}" step="1">
          <ol class="revlist" id="revlist">${log.map(
            (e) => html`<li><a href="${link(ctx.params, { rev: e.revision })}" data-revision="${e.revision}" ${R.raw(e.revision === asc[at].revision ? 'aria-current="true"' : "")}>
              <span class="rev">${e.revision}</span> ${R.chip(e.manager)} <span>${e.operation}${e.subresource ? "/" + e.subresource : ""}</span>
              <span class="ev">${e.event.toLowerCase()}</span> <span class="hint">${e.changedFields} field${e.changedFields === 1 ? "" : "s"}, ${R.age(e.unixMillis)} ago</span>${e.note ? html` <em>${e.note}</em>` : ""}</a></li>`,
          )}</ol>
        </section>
        <section aria-label="Object at revision" class="at">
          <h2 id="at-title"></h2>
          <p><a id="to-diff" href="#">Compare with the current object</a></p>
          <div id="at-code" class="code plain"></div>
        </section>
      </div>`);
    const slider = ctx.el.querySelector("#slider");
    const show = async (i) => {
      const e = asc[i];
      slider.value = String(i);
      slider.setAttribute("aria-valuetext", entryLabel(e));
      ctx.el.querySelector("#rev-out").textContent = e.revision;
      ctx.el.querySelectorAll("#revlist a").forEach((a) => a.toggleAttribute("aria-current", Number(a.dataset.revision) === e.revision));
      ctx.el.querySelector("#to-diff").href = link(ctx.params, { view: "diff", rev: "", a: e.revision, b: "current" });
      history.replaceState(null, "", link(ctx.params, { rev: e.revision }));
      const title = ctx.el.querySelector("#at-title");
      const box = ctx.el.querySelector("#at-code");
      title.textContent = `At revision ${e.revision}`;
      box.dataset.revision = "";
      let obj;
      try {
        obj = await objectAt(ctx, e.revision);
      } catch (err) {
        box.innerHTML = R.str(html`<p class="error">${err.message}</p>`);
        box.dataset.revision = String(e.revision);
        return;
      }
      if (Number(slider.value) !== i) return;
      title.textContent = `At revision ${e.revision}, after ${e.manager || "a delete"} (${e.operation})`;
      box.innerHTML = plainLines(R.yamlLines(R.shown(obj)));
      box.dataset.revision = String(e.revision);
    };
    slider.addEventListener("input", () => show(Number(slider.value)));
    ctx.el.querySelector("#revlist").addEventListener("click", (ev) => {
      const a = ev.target.closest("a[data-revision]");
      if (!a) return;
      ev.preventDefault();
      show(asc.findIndex((e) => e.revision === Number(a.dataset.revision)));
    });
    await show(at);
  }

  /** The object at `revision` (`"current"`: now). */
  async function objectAt(ctx, revision) {
    if (revision === "current") return FS.get(ctx.path, ctx.signal);
    return FS.get(`${ctx.path}/at?revision=${encodeURIComponent(revision)}`, ctx.signal);
  }

  function plainLines(lines) {
    return lines.map((l) => `<div class="ln" data-pointer="${esc(l.pointer)}"><code class="y">${esc(l.text)}</code></div>`).join("");
  }

  // ---- diff ----

  async function diffView(ctx) {
    const log = await revisionsOf(ctx);
    const revs = log.map((e) => e.revision);
    const a = ctx.params.get("a") || String(revs[1] || revs[0] || "current");
    const b = ctx.params.get("b") || "current";
    const opts = (sel) =>
      [html`<option value="current" ${R.raw(sel === "current" ? "selected" : "")}>current</option>`].concat(
        log.map((e) => html`<option value="${e.revision}" ${R.raw(String(e.revision) === sel ? "selected" : "")}>${entryLabel(e)}</option>`),
      );
    ctx.el.innerHTML = R.str(html`
      <form class="diff-pick" id="diff-pick">
        <label>Left <select name="a">${opts(a)}</select></label>
        <label>Right <select name="b">${opts(b)}</select></label>
        <button type="submit">Compare</button>
      </form>
      <div id="diff" class="diff" aria-live="polite"></div>`);
    ctx.el.querySelector("#diff-pick").addEventListener("submit", (e) => {
      e.preventDefault();
      const f = new FormData(e.target);
      location.hash = link(ctx.params, { a: f.get("a"), b: f.get("b") });
    });
    const box = ctx.el.querySelector("#diff");
    let left;
    let right;
    try {
      [left, right] = await Promise.all([objectAt(ctx, a), objectAt(ctx, b)]);
    } catch (err) {
      box.innerHTML = R.str(html`<p class="error">${err.message}</p>`);
      return;
    }
    box.innerHTML = diffTable(R.yamlLines(R.shown(left)), R.yamlLines(R.shown(right)), a, b);
  }

  /** A side-by-side diff; unchanged runs longer than 8 lines fold to their first and last 3. */
  function diffTable(la, lb, a, b) {
    const ops = R.diff(la.map((l) => l.text), lb.map((l) => l.text));
    const rows = [];
    let i = 0;
    let changed = 0;
    while (i < ops.length) {
      if (ops[i].op === "=") {
        let j = i;
        while (j < ops.length && ops[j].op === "=") j++;
        const run = ops.slice(i, j);
        const fold = run.length > 8;
        const keep = fold ? run.slice(0, i === 0 ? 0 : 3).concat(["fold"], run.slice(j === ops.length ? run.length : run.length - 3)) : run;
        for (const o of keep) {
          if (o === "fold") rows.push(`<tr class="fold"><td colspan="4">⋯ ${run.length - (i === 0 ? 0 : 3) - (j === ops.length ? 0 : 3)} unchanged lines</td></tr>`);
          else rows.push(`<tr><td class="n">${o.a + 1}</td><td><code>${esc(la[o.a].text)}</code></td><td class="n">${o.b + 1}</td><td><code>${esc(lb[o.b].text)}</code></td></tr>`);
        }
        i = j;
        continue;
      }
      // A change: removed lines beside added lines.
      let j = i;
      const del = [];
      const add = [];
      while (j < ops.length && ops[j].op !== "=") {
        (ops[j].op === "-" ? del : add).push(ops[j]);
        j++;
      }
      changed += Math.max(del.length, add.length);
      for (let k = 0; k < Math.max(del.length, add.length); k++) {
        const d = del[k];
        const ad = add[k];
        rows.push(
          `<tr class="chg">` +
            (d ? `<td class="n del">−${d.a + 1}</td><td class="del"><code>${esc(la[d.a].text)}</code></td>` : `<td class="n"></td><td class="gap"></td>`) +
            (ad ? `<td class="n add">+${ad.b + 1}</td><td class="add"><code>${esc(lb[ad.b].text)}</code></td>` : `<td class="n"></td><td class="gap"></td>`) +
            `</tr>`,
        );
      }
      i = j;
    }
    const label = (r) => (r === "current" ? "current" : `revision ${r}`);
    return (
      `<p class="hint">${changed ? `${changed} changed line${changed === 1 ? "" : "s"}` : "No difference"}; − marks a line only on the left, + a line only on the right.</p>` +
      `<table class="difft"><thead><tr><th scope="col" colspan="2">${esc(label(a))}</th><th scope="col" colspan="2">${esc(label(b))}</th></tr></thead><tbody>${rows.join("")}</tbody></table>`
    );
  }

  // ---- live ----

  /** Follows the object through a watch; on a change re-renders the blame (or says so). */
  function startLive(ctx) {
    const say = (s) => {
      ctx.live.textContent = s;
    };
    let rv = ctx.obj && ctx.obj.metadata ? ctx.obj.metadata.resourceVersion : "";
    let refresh = null;
    const onEvent = (ev) => {
      if (ev.type === "BOOKMARK") {
        rv = ev.object.metadata.resourceVersion || rv;
        return;
      }
      if (ev.type === "ERROR") throw new FS.ApiError(ev.object.code || 500, ev.object);
      const o = ev.object;
      rv = o.metadata.resourceVersion || rv;
      const mf = (o.metadata.managedFields || []).slice().sort((x, y) => String(y.time).localeCompare(String(x.time)));
      const by = mf.length ? ` by ${mf[0].manager}` : "";
      if (ev.type === "DELETED") {
        say(`deleted at revision ${rv}`);
        return;
      }
      say(`live · updated to revision ${rv}${by} at ${new Date().toLocaleTimeString()}`);
      document.body.dataset.liveRevision = rv;
      if (ctx.renderBlame) {
        clearTimeout(refresh);
        refresh = setTimeout(async () => {
          const blame = await FS.get(ctx.path + "/blame", ctx.signal).catch(() => null);
          if (blame && !ctx.signal.aborted) {
            ctx.obj = o;
            ctx.renderBlame(o, blame);
            if (ctx.timeline) openField(ctx, ctx.timeline.path, ctx.selected);
          }
        }, 150);
      }
    };
    const loop = async () => {
      let failures = 0;
      while (!ctx.signal.aborted) {
        try {
          if (!rv) rv = (await FS.get(ctx.path, ctx.signal)).metadata.resourceVersion || "";
          const q = new URLSearchParams({ watch: "true", allowWatchBookmarks: "true", timeoutSeconds: "600" });
          if (rv) q.set("resourceVersion", rv);
          say(rv ? `live · at revision ${rv}` : "live");
          await FS.watch(`${ctx.path}?${q}`, ctx.signal, onEvent);
          failures = 0;
        } catch (err) {
          if (ctx.signal.aborted) return;
          if (err.status === 410) rv = "";
          failures++;
          say(`live updates paused: ${err.message}; retrying`);
          await new Promise((r) => setTimeout(r, Math.min(30000, 1000 * 2 ** failures)));
        }
      }
    };
    loop();
  }
})();
