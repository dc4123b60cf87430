// nika serve's web view. Plain script, no build step, no dependency: every page works without
// it (links and forms); with it, pages follow the server's Server-Sent Events live.
"use strict";

(function () {
  const page = document.body.dataset.page;
  if (page === "runs" && document.getElementById("runs")) runsPage();
  if (document.getElementById("run")) runPage();
  if (document.getElementById("editor")) newPage();

  // el builds an element with text children only: nothing from the server becomes markup here.
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    for (const c of children) e.append(c);
    return e;
  }

  function badge(state) {
    return el("span", { class: "badge st-" + state }, state);
  }

  function counts(t) {
    const done = t.success + t.skipped + t.failure + t.cancelled;
    const s = el("span", { class: "counts" }, el("span", { class: "done" }, done + "/" + t.total));
    const parts = [["running", t.running, "running"], ["failure", t.failure, "failed"],
      ["skipped", t.skipped, "skipped"], ["cancelled", t.cancelled, "cancelled"]];
    for (const [st, n, word] of parts) {
      if (n) s.append(" ", el("span", { class: "c st-" + st }, n + " " + word));
    }
    return s;
  }

  // The runs page: rows change in place, new runs appear on top, the filter applies to both.
  function runsPage() {
    const body = document.querySelector("#runs tbody");
    const state = document.getElementById("f-state");
    const wf = document.getElementById("f-workflow");
    const shown = document.getElementById("runs-shown");
    const total = document.getElementById("runs-total");
    state.addEventListener("change", () => state.form.requestSubmit());
    const known = new Set(Array.from(body.rows, (r) => r.dataset.id));
    const matches = (r) => (!state.value || r.state === state.value) &&
      (!wf.value.trim() || r.workflow.toLowerCase().includes(wf.value.trim().toLowerCase()));
    const es = new EventSource("/ui/runs/stream");
    es.addEventListener("open", () => { document.getElementById("live-note").hidden = false; });
    es.addEventListener("run", (m) => {
      const r = JSON.parse(m.data);
      if (!known.has(r.id)) { known.add(r.id); total.textContent = known.size; }
      const row = el("tr", { "data-id": r.id, "data-state": r.state, "data-workflow": r.workflow },
        el("td", {}, el("a", { href: "/runs/" + encodeURIComponent(r.id) }, r.id)),
        el("td", {}, r.workflow), el("td", {}, badge(r.state)),
        el("td", { class: "num" }, r.start), el("td", { class: "num" }, r.duration), el("td", {}, counts(r.tasks)));
      const old = body.querySelector('tr[data-id="' + CSS.escape(r.id) + '"]');
      if (!matches(r)) { if (old) old.remove(); }
      else if (old) old.replaceWith(row);
      else { row.classList.add("fresh"); body.prepend(row); document.getElementById("runs-empty")?.remove(); }
      shown.textContent = body.rows.length;
    });
    es.addEventListener("end", () => { es.close(); document.getElementById("live-note").hidden = true; });
    es.addEventListener("gone", (m) => {
      const id = JSON.parse(m.data).id;
      known.delete(id);
      body.querySelector('tr[data-id="' + CSS.escape(id) + '"]')?.remove();
      shown.textContent = body.rows.length;
      total.textContent = known.size;
    });
    window.addEventListener("pagehide", () => es.close());
  }

  // The run page: the graph's colours follow the live stream (a task turns "running" when it
  // starts) and the canonical stream (its terminal state); the chosen task's panel refreshes as
  // its events arrive; at the end the page's facts and outputs are read again.
  function runPage() {
    const root = document.getElementById("run");
    const id = root.dataset.run;
    const running = new Map(); // task -> jobs running
    const final = new Map();   // task -> terminal state (canonical)
    const last = new Map();    // task -> how its last job ended (live)
    const terminal = { task_completed: "success", task_failed: "failure", task_skipped: "skipped", task_cancelled: "cancelled" };
    let refresh = 0, recount = 0;

    const nodes = new Map(Array.from(document.querySelectorAll("#graph a.node"), (n) => [n.dataset.task, n]));

    function paint(task) {
      const node = nodes.get(task);
      if (!node) return;
      const st = final.get(task) || ((running.get(task) || 0) > 0 ? "running" : last.get(task)) || "pending";
      if (node.classList.contains("st-" + st)) return;
      for (const c of Array.from(node.classList)) if (c.startsWith("st-")) node.classList.remove(c);
      node.classList.add("st-" + st);
      const t = node.querySelector("title");
      if (t) t.textContent = t.textContent.replace(/: [a-z]+$/, ": " + st);
      if (!recount) recount = requestAnimationFrame(countTasks);
    }

    // countTasks redraws the run's task counts from the graph's colours.
    function countTasks() {
      recount = 0;
      const t = { total: 0, running: 0, success: 0, failure: 0, skipped: 0, cancelled: 0 };
      for (const n of nodes.values()) {
        t.total++;
        for (const st of ["running", "success", "failure", "skipped", "cancelled"]) if (n.classList.contains("st-" + st)) t[st]++;
      }
      document.getElementById("run-counts")?.replaceChildren(counts(t));
    }

    function selected() {
      return new URLSearchParams(location.search).get("task");
    }

    function schedulePanel() {
      if (refresh) return;
      refresh = setTimeout(() => { refresh = 0; loadPanel(selected(), false); }, 300);
    }

    async function loadPanel(task, focus) {
      if (!task) return;
      const res = await fetch("/ui/runs/" + encodeURIComponent(id) + "/tasks/" + encodeURIComponent(task), { credentials: "same-origin" });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById("task");
      const cur = document.getElementById("task");
      if (!fresh || !cur) return;
      keepOpen(cur, fresh);
      cur.replaceWith(document.adoptNode(fresh));
      for (const n of document.querySelectorAll("#graph a.node")) n.classList.toggle("selected", n.dataset.task === task);
      if (focus) fresh.focus();
    }

    // keepOpen carries the open/closed state of the panel's <details> over a refresh.
    function keepOpen(cur, fresh) {
      const a = cur.querySelectorAll("details"), b = fresh.querySelectorAll("details");
      if (a.length !== b.length) return;
      a.forEach((d, i) => { b[i].open = d.open; });
    }

    function choose(task) {
      const u = new URL(location.href);
      u.searchParams.set("task", task);
      u.hash = "task";
      history.pushState({ task }, "", u);
      loadPanel(task, true);
    }

    document.addEventListener("click", (e) => {
      const a = e.target.closest("#graph a.node, a[data-task-link]");
      if (!a || e.ctrlKey || e.metaKey || e.shiftKey || e.button !== 0) return;
      e.preventDefault();
      choose(a.dataset.task || a.dataset.taskLink);
    });
    window.addEventListener("popstate", () => loadPanel(selected(), false));
    // Cancelling stays on the page: the stream shows the run ending.
    document.getElementById("cancel-form")?.addEventListener("submit", async (e) => {
      e.preventDefault();
      const button = document.getElementById("cancel");
      button.disabled = true;
      button.textContent = "Cancelling…";
      const res = await fetch(e.target.action, { method: "POST", credentials: "same-origin", redirect: "manual" });
      if (res.type !== "opaqueredirect" && !res.ok) { button.disabled = false; button.textContent = "Cancel run"; }
    });

    // A finished run's page is already what it will stay: nothing to follow.
    if (root.dataset.state !== "queued" && root.dataset.state !== "running") {
      root.dataset.ended = "true";
      return;
    }
    const es = new EventSource("/ui/runs/" + encodeURIComponent(id) + "/stream");
    es.addEventListener("live", (m) => {
      const n = JSON.parse(m.data);
      if (!n.task || !n.attempt) return;
      if (n.kind === "task_started") { running.set(n.task, (running.get(n.task) || 0) + 1); last.delete(n.task); }
      else if (n.kind === "task_finished") {
        running.set(n.task, Math.max(0, (running.get(n.task) || 0) - 1));
        if (n.iteration < 0) last.set(n.task, n.status);
      } else if (n.kind === "task_retrying") last.delete(n.task);
      paint(n.task);
      if (selected() === n.task) schedulePanel();
    });
    es.addEventListener("canonical", (m) => {
      const e = JSON.parse(m.data);
      if (e.task && terminal[e.kind] && e.iteration === undefined) { final.set(e.task, terminal[e.kind]); paint(e.task); }
      if (e.task && selected() === e.task) schedulePanel();
    });
    es.addEventListener("state", (m) => {
      const st = JSON.parse(m.data);
      root.dataset.state = st;
      document.getElementById("run-state").replaceChildren(badge(st));
    });
    es.addEventListener("end", async () => {
      es.close();
      const res = await fetch(location.href, { credentials: "same-origin" });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      for (const sel of [".facts", ".actions"]) {
        const fresh = doc.querySelector("#run " + sel), cur = root.querySelector(sel);
        if (fresh && cur) cur.replaceWith(document.adoptNode(fresh));
      }
      const slot = doc.getElementById("task-slot"), cur = document.getElementById("task-slot");
      if (slot && cur) { keepOpen(cur, slot); cur.replaceWith(document.adoptNode(slot)); }
      root.dataset.ended = "true";
    });
    window.addEventListener("pagehide", () => es.close());
  }

  // The editor: the same checker as a submission, as you type; a finding's position moves the
  // caret there.
  function newPage() {
    const text = document.getElementById("workflow");
    const box = document.getElementById("findings");
    let timer = 0, seq = 0;

    async function check() {
      const mine = ++seq;
      const res = await fetch("/ui/check", { method: "POST", body: text.value, credentials: "same-origin",
        headers: { "Content-Type": "text/yaml; charset=utf-8" } });
      if (!res.ok || mine !== seq) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.querySelector(".findings");
      if (fresh) box.replaceChildren(document.adoptNode(fresh));
    }

    text.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(check, 350); });
    document.getElementById("upload").addEventListener("change", async (e) => {
      const f = e.target.files[0];
      if (!f) return;
      text.value = await f.text();
      e.target.value = "";
      check();
    });
    box.addEventListener("click", (e) => {
      const a = e.target.closest("a.at");
      if (!a) return;
      e.preventDefault();
      const lines = text.value.split("\n");
      const line = Math.min(Math.max(+a.dataset.line, 1), lines.length);
      let at = 0;
      for (let i = 0; i < line - 1; i++) at += lines[i].length + 1;
      at += Math.max(+a.dataset.col - 1, 0);
      text.focus();
      text.setSelectionRange(at, at);
    });
    if (text.value.trim()) check();
  }
})();
