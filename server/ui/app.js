// fieldstore web view: the hash router. `#/objects?type=…&ns=…`, `#/object?type=…&ns=…&name=…
// [&view=at|diff][&field=…][&rev=…][&a=…&b=…]`, `#/owners?[type=…][&manager=…]`.
"use strict";

(() => {
  const main = document.getElementById("main");
  let current = null;

  async function route() {
    if (current) current.abort();
    if (current) document.getElementById("status").textContent = "";
    const ctl = new AbortController();
    current = ctl;
    const hash = location.hash.replace(/^#\/?/, "");
    const [page, query] = [hash.split("?")[0] || "objects", hash.split("?").slice(1).join("?")];
    const params = new URLSearchParams(query);
    document.querySelectorAll("header nav a").forEach((a) => a.toggleAttribute("aria-current", a.dataset.page === (page === "object" ? "objects" : page)));
    document.body.dataset.state = "loading";
    main.setAttribute("aria-busy", "true");
    try {
      await FS.loadTypes();
      const render = FS.pages[page] || FS.pages.objects;
      await render(main, params, ctl.signal);
      if (ctl.signal.aborted) return;
      document.title = `${main.querySelector("h1") ? main.querySelector("h1").textContent.trim() : "fieldstore"} · fieldstore`;
      document.body.dataset.state = "ready";
    } catch (err) {
      if (ctl.signal.aborted) return;
      const signIn = err.status === 401 ? FS.R.html`<p><button type="button" id="sign-in" class="primary">Sign in</button></p>` : "";
      main.innerHTML = FS.R.str(FS.R.html`<h1>Cannot show this page</h1><p class="error" role="alert">${err.message}</p>${signIn}`);
      const b = main.querySelector("#sign-in");
      if (b) b.addEventListener("click", () => FS.askToken(null).then(route, () => {}));
      document.body.dataset.state = "error";
    } finally {
      main.removeAttribute("aria-busy");
    }
  }
  FS.route = route;

  document.getElementById("forget-token").addEventListener("click", () => {
    FS.setToken("");
    FS.types = null;
    route();
    document.getElementById("status").textContent = "Token forgotten.";
  });
  window.addEventListener("hashchange", route);
  route();
})();
