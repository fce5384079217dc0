// fieldstore web view: the object list (type and namespace pickers, name, age, last writer) and
// the owners page (managers, what each owns, who owns a field; rename and release behind a
// confirmation, offered only to callers the authorization rules allow).
"use strict";

(() => {
  const { R } = FS;
  const { html } = R;
  const PAGE = 200;

  const sel = (on) => R.raw(on ? "selected" : "");

  function typeOptions(current, withAll) {
    const all = withAll ? [html`<option value="" ${sel(!current)}>all types</option>`] : [];
    return all.concat(
      FS.types.map((t) => html`<option value="${t.key}" ${sel(current && current.key === t.key)}>${t.kind} (${t.group ? t.group + "/" : ""}${t.version})</option>`),
    );
  }

  /**
   * The newest managedFields entry by time: only a guess at the last writer. Times have whole
   * seconds (an apply and another manager's update in the same second tie), an entry's time moves
   * only when its own fields change, and servers' clocks differ.
   */
  function newestEntry(o) {
    const mf = (o.metadata && o.metadata.managedFields) || [];
    let best = null;
    for (const e of mf) if (!best || String(e.time || "") > String(best.time || "")) best = e;
    return best;
  }

  /**
   * Who wrote the object last, and how: the newest write of its log (field history), the write
   * that made its resourceVersion, whatever its operation and manager. The newest managedFields
   * entry when history does not hold that write (history off for the type, or no `get`).
   */
  async function lastWriter(t, o, signal) {
    const m = o.metadata;
    try {
      const log = await FS.get(FS.objectPath(t, m.namespace, m.name) + "/log?limit=1", signal);
      const e = log && log[0];
      if (e && e.manager && String(e.revision) === String(m.resourceVersion)) return e;
    } catch (err) {
      if (signal && signal.aborted) throw err;
    }
    return newestEntry(o);
  }

  const objectLink = (t, ns, name) => `#/object?${new URLSearchParams(Object.assign({ type: t.key }, t.namespaced ? { ns } : {}, { name }))}`;

  FS.pages.objects = async (main, params, signal) => {
    const t = FS.findType(params.get("type") || "apps/v1/deployments") || FS.types[0];
    const ns = t.namespaced ? params.get("ns") || "" : "";
    const nsList = await FS.get("/api/v1/namespaces", signal).catch(() => ({ items: [] }));
    main.innerHTML = R.str(html`
      <h1>Objects</h1>
      <form class="pick" id="pick">
        <label>Type <select name="type">${typeOptions(t, false)}</select></label>
        <label>Namespace <select name="ns" ${R.raw(t.namespaced ? "" : "disabled")}>
          <option value="" ${sel(!ns)}>all namespaces</option>
          ${(nsList.items || []).map((n) => html`<option ${sel(n.metadata.name === ns)}>${n.metadata.name}</option>`)}
        </select></label>
        <noscript><button type="submit">Show</button></noscript>
      </form>
      <table class="list" aria-describedby="count">
        <caption id="count">loading…</caption>
        <thead><tr><th scope="col">Name</th>${t.namespaced && !ns ? html`<th scope="col">Namespace</th>` : ""}<th scope="col">Age</th><th scope="col">Last writer</th><th scope="col">Revision</th></tr></thead>
        <tbody id="rows"></tbody>
      </table>
      <p><button type="button" id="more" hidden>More objects</button></p>`);
    const form = main.querySelector("#pick");
    form.addEventListener("change", () => {
      const f = new FormData(form);
      location.hash = "#/objects?" + new URLSearchParams({ type: f.get("type"), ns: f.get("ns") || "" });
    });
    let cont = "";
    let count = 0;
    const more = main.querySelector("#more");
    const load = async () => {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (cont) q.set("continue", cont);
      const list = await FS.get(FS.collectionPath(t, ns) + "?" + q, signal);
      const items = list.items || [];
      const writers = await Promise.all(items.map((o) => lastWriter(t, o, signal)));
      const rows = items.map((o, i) => {
        const w = writers[i];
        const m = o.metadata;
        return html`<tr><td><a href="${objectLink(t, m.namespace, m.name)}">${m.name}</a></td>
          ${t.namespaced && !ns ? html`<td>${m.namespace}</td>` : ""}
          <td title="${m.creationTimestamp}">${R.age(m.creationTimestamp)}</td>
          <td>${w ? html`${R.chip(w.manager)} <span class="op">${w.operation}${w.subresource ? "/" + w.subresource : ""}</span>` : ""}</td>
          <td>${m.resourceVersion}</td></tr>`;
      });
      count += rows.length;
      main.querySelector("#rows").insertAdjacentHTML("beforeend", R.str(rows));
      cont = (list.metadata && list.metadata.continue) || "";
      more.hidden = !cont;
      main.querySelector("#count").textContent = `${count} ${t.kind} object${count === 1 ? "" : "s"}${ns ? " in " + ns : ""}${cont ? " (more to load)" : ""}`;
    };
    more.addEventListener("click", load);
    await load();
  };

  // ---- owners ----

  FS.pages.owners = async (main, params, signal) => {
    const t = params.get("type") ? FS.findType(params.get("type")) : null;
    const resource = t ? FS.resourceName(t) : "";
    const manager = params.get("manager") || "";
    const q = resource ? "?resource=" + encodeURIComponent(resource) : "";
    const [managers, admin] = await Promise.all([FS.get("/apis/fieldstore.io/v1/managers" + q, signal), FS.may("admin")]);
    const href = (changes) => {
      const p = new URLSearchParams(params);
      for (const [k, v] of Object.entries(changes)) v ? p.set(k, v) : p.delete(k);
      return "#/owners?" + p;
    };
    main.innerHTML = R.str(html`
      <h1>Owners</h1>
      <form class="pick" id="pick"><label>Type <select name="type">${typeOptions(t, true)}</select></label></form>
      <section aria-labelledby="mgr-h"><h2 id="mgr-h">Managers${t ? html` of ${t.kind}` : " of the whole store"}</h2>
      <table class="list"><thead><tr><th scope="col">Manager</th><th scope="col">Objects</th><th scope="col">Fields</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
      <tbody>${managers.map(
        (m) => html`<tr ${R.raw(m.manager === manager ? 'class="cur"' : "")}><td>${R.chip(m.manager)}</td><td>${m.objects}</td><td>${m.fields}</td>
          <td class="actions"><a href="${href({ manager: m.manager })}">What it owns</a>
          ${admin ? html`<button type="button" data-act="rename" data-manager="${m.manager}">Rename…</button> <button type="button" data-act="release" data-manager="${m.manager}">Release…</button>` : ""}</td></tr>`,
      )}</tbody></table>
      ${managers.length ? "" : html`<p>No manager owns fields${t ? " of this type" : ""}.</p>`}
      ${admin ? "" : html`<p class="hint">Renaming and releasing need the <code>admin</code> verb, which your identity does not have.</p>`}
      </section>
      <section id="owned" aria-live="polite"></section>
      <section aria-labelledby="who-h"><h2 id="who-h">Who owns a field</h2>
        <form id="who" class="pick"><label>Field path <input name="path" placeholder=".spec.replicas" value="${params.get("path") || ""}" ${R.raw(t ? "" : "disabled")}></label>
        <button type="submit" ${R.raw(t ? "" : "disabled")}>Find owners</button>${t ? "" : html` <span class="hint">pick a type first</span>`}</form>
        <div id="who-out"></div></section>`);
    main.querySelector("#pick").addEventListener("change", (e) => {
      location.hash = "#/owners?" + new URLSearchParams({ type: e.target.value });
    });
    main.querySelector("section[aria-labelledby=mgr-h]").addEventListener("click", (e) => {
      const b = e.target.closest("button[data-act]");
      if (b) (b.dataset.act === "rename" ? rename : release)(b.dataset.manager, t);
    });
    main.querySelector("#who").addEventListener("submit", async (e) => {
      e.preventDefault();
      const path = new FormData(e.target).get("path");
      history.replaceState(null, "", href({ path }));
      const out = main.querySelector("#who-out");
      try {
        const owners = await FS.get(`/apis/fieldstore.io/v1/owners?${new URLSearchParams({ resource, path })}`, signal);
        out.innerHTML = R.str(html`<table class="list"><caption>${owners.length} owner${owners.length === 1 ? "" : "s"} of ${path}</caption>
          <thead><tr><th scope="col">Object</th><th scope="col">Field</th><th scope="col">Manager</th></tr></thead>
          <tbody>${owners.map((o) => html`<tr><td><a href="${objectLink(t, o.namespace, o.name)}">${o.namespace ? o.namespace + "/" : ""}${o.name}</a></td><td><code>${o.path}</code></td><td>${R.chip(o.manager)}</td></tr>`)}</tbody></table>`);
      } catch (err) {
        out.innerHTML = R.str(html`<p class="error">${err.message}</p>`);
      }
    });
    if (params.get("path") && t) main.querySelector("#who").requestSubmit();
    if (manager) await owned(main.querySelector("#owned"), manager, resource, signal);
  };

  async function owned(box, manager, resource, signal) {
    box.innerHTML = R.str(html`<h2>Owned by ${R.chip(manager)}</h2>
      <table class="list"><thead><tr><th scope="col">Object</th><th scope="col">Type</th><th scope="col">Entries</th><th scope="col">Fields</th></tr></thead><tbody id="owned-rows"></tbody></table>
      <p><button type="button" id="owned-more" hidden>More objects</button></p>`);
    let cont = "";
    const more = box.querySelector("#owned-more");
    const load = async () => {
      const q = new URLSearchParams({ manager, limit: String(PAGE) });
      if (resource) q.set("resource", resource);
      if (cont) q.set("continue", cont);
      const page = await FS.get("/apis/fieldstore.io/v1/managedobjects?" + q, signal);
      const rows = (page.items || []).map((o) => {
        const t = FS.types.find((x) => FS.resourceName(x) === o.resource);
        const label = `${o.namespace ? o.namespace + "/" : ""}${o.name}`;
        return html`<tr><td>${t ? html`<a href="${objectLink(t, o.namespace, o.name)}">${label}</a>` : label}</td><td>${t ? t.kind : o.resource}</td><td>${o.operations.join(", ")}</td><td>${o.fieldCount}</td></tr>`;
      });
      box.querySelector("#owned-rows").insertAdjacentHTML("beforeend", R.str(rows));
      cont = page.continue || "";
      more.hidden = !cont;
    };
    more.addEventListener("click", load);
    await load();
  }

  /** A confirmation dialog; resolves with the form's values, or null when cancelled. */
  function confirmDialog(title, body, action) {
    const dlg = document.getElementById("confirm-dialog");
    dlg.querySelector("h2").textContent = title;
    dlg.querySelector(".body").innerHTML = R.str(body);
    dlg.querySelector("button[value=ok]").textContent = action;
    dlg.returnValue = "";
    return new Promise((resolve) => {
      // The answer of this showing: its form's submit (which button) or its cancel (Escape).
      // Not the close event: that is queued, and one of an earlier showing may still come.
      const form = dlg.querySelector("form");
      const finish = (ok) => {
        form.removeEventListener("submit", onSubmit);
        dlg.removeEventListener("cancel", onCancel);
        resolve(ok ? new FormData(form) : null);
      };
      const onSubmit = (e) => finish(!!e.submitter && e.submitter.value === "ok");
      const onCancel = () => finish(false);
      form.addEventListener("submit", onSubmit);
      dlg.addEventListener("cancel", onCancel);
      dlg.showModal();
      const first = dlg.querySelector(".body input");
      (first || dlg.querySelector("button[value=cancel]")).focus();
    });
  }

  const announce = (s) => {
    document.getElementById("status").textContent = s;
  };

  async function rename(manager) {
    const f = await confirmDialog(
      `Rename manager ${manager}`,
      html`<p>Every object ${manager} owns fields of gets its managedFields rewritten; each change is recorded in history as an Update.</p>
        <label>New name <input name="to" required maxlength="128"></label>`,
      "Rename",
    );
    if (!f || !f.get("to")) return;
    try {
      const r = await FS.post("/apis/fieldstore.io/v1/renamemanager", { from: manager, to: f.get("to") });
      await FS.route();
      announce(`Renamed ${manager} to ${f.get("to")} in ${r.count} object${r.count === 1 ? "" : "s"}.`);
    } catch (err) {
      announce(`Rename failed: ${err.message}`);
    }
  }

  async function release(manager, t) {
    const f = await confirmDialog(
      `Release manager ${manager}`,
      html`<p>${manager} stops owning fields${t ? html` of ${t.kind} objects` : " in every object"}; the fields keep their values. Each change is recorded in history.</p>
        <label>Only objects matching labels (optional) <input name="labelSelector" placeholder="app=web"></label>`,
      "Release",
    );
    if (!f) return;
    try {
      const r = await FS.post("/apis/fieldstore.io/v1/release", { manager, resource: t ? FS.resourceName(t) : "", labelSelector: f.get("labelSelector") || "" });
      await FS.route();
      announce(`Released ${manager} in ${r.count} object${r.count === 1 ? "" : "s"}.`);
    } catch (err) {
      announce(`Release failed: ${err.message}`);
    }
  }
})();
