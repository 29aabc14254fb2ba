"use strict";
// The dashboard: the scheduler's state and the fleet's counts arrive once a second over
// /admin/events; the node table holds only the rows in view, read as a page of /admin/nodes
// (offset, limit and the filters) after each update, each scroll and each change of filter. One
// page request is in flight at a time and the next asks for what is in view then, so the table
// never falls behind however many nodes there are or however fast they change.
const HISTORY = 300;
const OVERSCAN = 20; // rows read above and below the view, so a short scroll shows rows at once
const TOKEN_KEY = "heartgate-admin-token";
const rateSeries = [], ttftSeries = [];
let previous = null;
let rowHeight = 30;
const counted = new Map(); // node id -> {requests, errors, at, rps, errorShare} of the rows in view

function text(value) { return value === null || value === undefined ? "-" : String(value); }
function count(n) { return Number(n).toLocaleString("en-US"); }
function el(tag, cls, content) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (content !== undefined) e.textContent = content;
  return e;
}
function age(ms) { return ms < 1000 ? ms + " ms" : (ms / 1000).toFixed(1) + " s"; }
function load(l) {
  const parts = [];
  if (l.inFlight !== undefined) parts.push("running " + l.inFlight);
  if (l.queued !== undefined) parts.push("queued " + l.queued);
  if (l.kvCacheUsage !== undefined) parts.push("KV " + Math.round(l.kvCacheUsage * 100) + "%");
  if (l.prefixCacheHitRate !== undefined) parts.push("cache hits " + Math.round(l.prefixCacheHitRate * 100) + "%");
  return parts.length ? parts.join(", ") : "-";
}
function gpus(list) {
  if (!list || !list.length) return "-";
  return list.map(g => {
    const util = g.utilization === null || g.utilization === undefined ? "" : " " + Math.round(g.utilization * 100) + "%";
    const mem = g.memoryTotalMiB ? " " + Math.round((g.memoryUsedMiB || 0) / 1024) + "/" + Math.round(g.memoryTotalMiB / 1024) + " GiB" : "";
    return (g.name || "GPU") + util + mem;
  }).join("; ");
}
function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: "Bearer " + token } : {};
}

// ---- the update of each second: header, counts, keys, charts ----

function render(state) {
  document.getElementById("strategy").textContent = state.strategy;
  const summary = state.summary;
  document.getElementById("counts").textContent = count(summary.nodes) + " listed, " + count(summary.routable) + " routable";
  const kafka = document.getElementById("kafka");
  if (state.kafka.selfPreservation) { kafka.textContent = "Kafka unreachable: self-preservation"; kafka.className = "pill bad"; }
  else if (!state.kafka.caughtUp) { kafka.textContent = "Kafka: catching up"; kafka.className = "pill warn"; }
  else { kafka.textContent = "Kafka ok, lag " + state.kafka.lag; kafka.className = "pill ok"; }
  if (state.replicas) {
    const r = state.replicas;
    document.getElementById("replica-count").textContent = r.replicas.length
        + (r.limits === "shared" ? "" : ", limits: local share");
    document.getElementById("replica-list").textContent = r.replicas
        .map(x => (x.self ? "*" : "") + x.id + " @" + x.address + " q" + x.queueDepth).join(", ");
  }
  const ready = document.getElementById("ready");
  const isReady = !state.draining && state.kafka.caughtUp && summary.routable > 0;
  ready.textContent = state.draining ? "draining" : isReady ? "ready" : "not ready";
  ready.className = "pill " + (isReady ? "ok" : "bad");
  renderSummary(summary);

  const dt = previous ? (state.time - previous.time) / 1000 : 0;
  renderKeys(state.keys || [], previous ? previous.keys || [] : [], dt);
  renderAffinity(state.affinity, previous ? previous.affinity : null);
  if (previous && dt > 0) push(rateSeries, (state.requests - previous.requests) / dt);
  push(ttftSeries, state.firstByteMedianMs);
  draw("rate", rateSeries, "#58a6ff");
  draw("ttft", ttftSeries, "#d29922");
  previous = state;
  document.body.dataset.eventTime = String(state.time);
  refreshRows();
}

// Counts by state, backend and model; a click on one filters the table by it.
function renderSummary(summary) {
  chips("by-state", summary.byState, 10, name => select("filter-state", name));
  chips("by-backend", summary.byBackend, 10, null);
  chips("by-model", summary.byModel, 12, name => select("filter-model", name));
  const models = Object.entries(summary.byModel).sort((a, b) => b[1] - a[1]).slice(0, 500).map(e => e[0]).sort();
  const list = document.getElementById("filter-model");
  const shown = Array.from(list.options).slice(1).map(o => o.value);
  if (shown.join("\n") !== models.join("\n")) {
    const chosen = list.value;
    list.replaceChildren(new Option("any model", ""), ...models.map(m => new Option(m, m)));
    list.value = models.includes(chosen) ? chosen : "";
  }
}
function chips(id, counts, most, onPick) {
  const box = document.getElementById(id);
  const entries = Object.entries(counts).sort((a, b) => b[1] - a[1]);
  const parts = [box.firstElementChild];
  for (const [name, n] of entries.slice(0, most)) {
    const chip = el("button", "chip", name + " " + count(n));
    chip.type = "button";
    chip.dataset.name = name;
    if (onPick) chip.addEventListener("click", () => onPick(name)); else chip.disabled = true;
    parts.push(chip);
  }
  if (entries.length > most) parts.push(el("span", "why", "+" + (entries.length - most) + " more"));
  box.replaceChildren(...parts);
}
function select(id, value) {
  document.getElementById(id).value = value;
  filtersChanged();
}

// Hit ratio over the last update when requests came in, else since the start: hits of the keyed responses.
function renderAffinity(now, before) {
  const box = document.getElementById("affinity");
  box.hidden = !now;
  if (!now) return;
  let d = now;
  if (before && (now.hit + now.spill + now.none) > (before.hit + before.spill + before.none)) {
    d = { hit: now.hit - before.hit, spill: now.spill - before.spill, none: now.none - before.none };
  }
  const keyed = d.hit + d.spill;
  document.getElementById("hit-ratio").textContent = keyed > 0 ? Math.round(100 * d.hit / keyed) + "% hits" : "-";
  document.getElementById("affinity-detail").textContent =
      "(" + text(now.hit) + " hit, " + text(now.spill) + " spill, " + text(now.none) + " no key)";
}
function renderKeys(keys, earlier, dt) {
  const before = {};
  earlier.forEach(k => before[k.key] = k);
  const body = document.getElementById("keys");
  body.replaceChildren();
  if (!keys.length) {
    const row = el("tr"); const cell = el("td", "empty", "no request yet");
    cell.colSpan = 6; row.appendChild(cell); body.appendChild(row);
  }
  for (const k of keys) {
    const row = el("tr");
    row.dataset.key = k.key;
    const b = before[k.key];
    const tokens = k.promptTokens + k.completionTokens;
    const tokensBefore = b ? b.promptTokens + b.completionTokens : tokens;
    row.appendChild(el("td", "id", k.key === "" ? "(no key)" : k.key));
    row.appendChild(el("td", "requests", text(k.requests)));
    row.appendChild(el("td", "rps", b && dt > 0 ? ((k.requests - b.requests) / dt).toFixed(1) : "-"));
    row.appendChild(el("td", "prompt", text(k.promptTokens)));
    row.appendChild(el("td", "completion", text(k.completionTokens)));
    row.appendChild(el("td", "tps", b && dt > 0 ? ((tokens - tokensBefore) / dt).toFixed(0) : "-"));
    body.appendChild(row);
  }
}
function push(series, value) { series.push(value); if (series.length > HISTORY) series.shift(); }

function draw(id, series, color) {
  const canvas = document.getElementById(id);
  const w = canvas.clientWidth, h = canvas.clientHeight, ratio = window.devicePixelRatio || 1;
  canvas.width = w * ratio; canvas.height = h * ratio;
  const g = canvas.getContext("2d");
  g.scale(ratio, ratio);
  g.clearRect(0, 0, w, h);
  const values = series.filter(v => v !== null && v !== undefined && !isNaN(v));
  const max = Math.max(1, ...values) * 1.1;
  g.strokeStyle = "#26313c"; g.fillStyle = "#8a97a6"; g.font = "11px system-ui";
  for (let i = 0; i <= 2; i++) {
    const y = h - 16 - (h - 24) * i / 2;
    g.beginPath(); g.moveTo(32, y); g.lineTo(w, y); g.stroke();
    g.fillText((max * i / 2).toFixed(max < 10 ? 1 : 0), 0, y + 4);
  }
  g.strokeStyle = color; g.lineWidth = 1.5; g.beginPath();
  let started = false;
  series.forEach((v, i) => {
    if (v === null || v === undefined || isNaN(v)) { started = false; return; }
    const x = 32 + (w - 32) * (HISTORY - series.length + i) / (HISTORY - 1);
    const y = h - 16 - (h - 24) * v / max;
    if (started) g.lineTo(x, y); else { g.moveTo(x, y); started = true; }
  });
  g.stroke();
}

// ---- the node table: only the rows in view ----

let reading = false, readAgain = false, filterTimer = null;
// The filters the table shows, as query parameters: taken from the inputs once typing pauses, so
// that a read between a keystroke and the scroll back to the top still asks for what is shown.
let applied = inputFilters(); // replaced, never changed: a read compares it by identity

function inputFilters() {
  const filters = new URLSearchParams();
  const search = document.getElementById("search").value.trim();
  if (search) filters.set("prefix", search);
  for (const [id, name] of [["filter-state", "state"], ["filter-routable", "routable"], ["filter-model", "model"]]) {
    const v = document.getElementById(id).value;
    if (v) filters.set(name, v);
  }
  return filters;
}

function filtersChanged() {
  clearTimeout(filterTimer);
  filterTimer = setTimeout(() => {
    applied = inputFilters();
    document.getElementById("table-wrap").scrollTop = 0;
    refreshRows();
  }, 120);
}

// Reads the rows in view now; while a read is out, asks for one more read after it, never a queue.
function refreshRows() {
  if (reading) { readAgain = true; return; }
  reading = true;
  readRows().catch(() => { /* the event stream reconnects; the next update reads again */ }).finally(() => {
    reading = false;
    if (readAgain) { readAgain = false; refreshRows(); }
  });
}

async function readRows() {
  const wrap = document.getElementById("table-wrap");
  const first = Math.max(0, Math.floor(wrap.scrollTop / rowHeight) - OVERSCAN);
  const limit = Math.ceil(wrap.clientHeight / rowHeight) + 2 * OVERSCAN;
  const asked = applied;
  const params = new URLSearchParams(asked);
  params.set("limit", String(limit));
  params.set("offset", String(first));
  const response = await fetch("/admin/nodes?" + params, { headers: authHeaders(), cache: "no-store" });
  if (response.status === 401) {
    refused();
    return;
  }
  if (!response.ok) return;
  const page = await response.json();
  if (asked !== applied) return; // the filters changed meanwhile: the read after this one shows them
  renderRows(page.nodes, first, page.total, [...asked.keys()].length > 0);
}

function renderRows(nodes, first, total, filtered) {
  const rows = document.getElementById("rows");
  rows.style.height = (total * rowHeight) + "px";
  document.getElementById("matching").textContent = filtered ? count(total) + " matching" : "";
  document.body.dataset.rowsTotal = String(total);
  if (!nodes.length) {
    rows.replaceChildren(el("div", "empty", filtered ? "no node matches" : "no node is sending heartbeats"));
    return;
  }
  const now = performance.now();
  const keep = new Map();
  const out = nodes.map((n, i) => {
    const rate = rates(n, now);
    keep.set(n.nodeId, rate);
    return row(n, first + i, rate);
  });
  counted.clear();
  keep.forEach((v, k) => counted.set(k, v));
  rows.replaceChildren(...out);
}

// Requests per second and error share of a node since it was last read (at least half a second before).
function rates(n, now) {
  const b = counted.get(n.nodeId);
  if (!b) return { requests: n.requests, errors: n.errors, at: now, rps: null, errorShare: null };
  if (now - b.at < 500) return b;
  const reqs = n.requests - b.requests;
  return { requests: n.requests, errors: n.errors, at: now, rps: reqs / ((now - b.at) / 1000),
           errorShare: reqs > 0 ? (n.errors - b.errors) / reqs : null };
}

function row(n, index, rate) {
  const r = el("div", "row grid");
  r.setAttribute("role", "row");
  r.style.top = (index * rowHeight) + "px";
  r.dataset.node = n.nodeId;
  r.dataset.index = String(index);
  const cell = (cls, value) => { const c = el("div", cls, value); c.title = value; r.appendChild(c); return c; };
  cell("id", n.nodeId);
  cell("state " + n.state, n.state);
  cell("routable", n.routable ? "yes" : "no" + (n.notRoutableReason ? ": " + n.notRoutableReason : ""));
  cell("weight", text(n.weight));
  cell("models", n.models.length ? n.models.join(", ") : "any");
  cell("loaded", n.loaded && n.loaded.length ? n.loaded.join(", ") : "-");
  cell("age", age(n.lastHeartbeatAgeMs));
  cell("inflight", text(n.inFlight));
  cell("load", load(n.load));
  cell("gpus", gpus(n.gpus));
  cell("rps", rate.rps === null ? "-" : rate.rps.toFixed(1));
  cell("errors", rate.errorShare === null ? "-" : Math.round(100 * rate.errorShare) + "%");
  return r;
}

document.getElementById("table-wrap").addEventListener("scroll", () => refreshRows(), { passive: true });
document.getElementById("search").addEventListener("input", filtersChanged);
for (const id of ["filter-state", "filter-routable", "filter-model"]) {
  document.getElementById(id).addEventListener("change", filtersChanged);
}
window.addEventListener("resize", () => refreshRows());

// ---- the event stream ----
// Read with fetch rather than EventSource, which cannot send an Authorization header. With
// --admin-token the page asks for the token once and keeps it for the tab.

let stream = null; // the open /admin/events read, to stop when the token is refused

// The token was refused (by the event stream or a page of nodes): stop the updates, ask again.
function refused() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  sessionStorage.removeItem(TOKEN_KEY);
  if (stream) { stream.abort(); stream = null; }
  askToken(token ? "That token was refused." : "");
}

function askToken(message) {
  document.getElementById("fleet").hidden = true;
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message;
  const conn = document.getElementById("conn");
  conn.textContent = "token needed"; conn.className = "pill bad";
  document.getElementById("token").focus();
}

document.getElementById("login").addEventListener("submit", e => {
  e.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token").value.trim());
  document.getElementById("token").value = "";
  document.getElementById("login").hidden = true;
  connect();
});

async function connect() {
  const conn = document.getElementById("conn");
  if (stream) stream.abort();
  const mine = new AbortController();
  stream = mine;
  let response;
  try {
    response = await fetch("/admin/events", { headers: authHeaders(), cache: "no-store", signal: mine.signal });
  } catch (e) {
    return mine.signal.aborted ? undefined : retry();
  }
  if (response.status === 401) {
    return refused();
  }
  if (!response.ok) {
    return retry();
  }
  document.getElementById("fleet").hidden = false;
  conn.textContent = "live"; conn.className = "pill ok";
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end, latest = null;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = event.split("\n").filter(l => l.startsWith("data:")).map(l => l.slice(5).trimStart()).join("\n");
        if (data) latest = data;
      }
      if (latest) render(JSON.parse(latest)); // behind by several updates (a busy tab): only the newest counts
    }
  } catch (e) {
    // The stream broke (or was stopped): reconnect below unless stopped.
  }
  if (!mine.signal.aborted) retry();
}

function retry() {
  const conn = document.getElementById("conn");
  conn.textContent = "reconnecting"; conn.className = "pill warn";
  setTimeout(connect, 1000);
}
connect();
