// strom console: one page, routed by the URL's hash, every view refreshed every two seconds
// from the console's API (/api/console/...) and the REST proxy's (/v3/...).
"use strict";

const REFRESH_MS = 2000;
const LAG_POINTS = 90;
const MAX_ROWS = 500;  // a table of 10,000 rows takes the browser seconds to lay out
const lagHistory = {};  // group -> its total lag at each refresh, for the chart
// Which pages beside strom's own to offer: asked for beside the first page's answers, not
// before them (one round trip less before the first paint).
const featuresReady = fetch("/api/console/features")
  .then((answer) => (answer.ok ? answer.json() : {})).catch(() => ({}));
const recordsHeld = {};  // topic -> its records held when last counted
const resetPlans = {};  // group -> the dry run of a reset, shown until applied
let clusterId = null;
let timer = null;
let renderedHash = null;

const page = document.getElementById("page");

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function api(path, options) {
  let answer;
  try {
    answer = await fetch(path, options);
  } catch (error) {
    throw new Error(`cannot reach the console: ${error.message}`);
  }
  if (answer.status === 401 && (await featuresReady).login) location.assign("/login");  // the session ended
  const body = answer.status === 204 ? null : await answer.json();
  if (!answer.ok) throw new Error(body && body.message ? body.message : answer.statusText);
  return body;
}

async function currentClusterId() {
  if (!clusterId) clusterId = (await api("/api/console/cluster")).cluster_id;
  return clusterId;
}

// What the user typed (inputs, choices, one-line results) survives the page's refresh.
function saveInputs() {
  const values = {};
  page.querySelectorAll("input[id], select[id]").forEach((e) => { values[e.id] = e.value; });
  const results = [...page.querySelectorAll(".result[id]")];
  return { values, results, focused: document.activeElement && document.activeElement.id };
}

function restoreInputs({ values, results, focused }) {
  for (const [id, value] of Object.entries(values)) setValue(id, value);
  for (const line of results) document.getElementById(line.id)?.replaceWith(line);
  if (focused) document.getElementById(focused)?.focus();
}

// Runs one of the page's actions, its outcome (or error) as one line in the element `resultId`.
async function act(resultId, action) {
  const line = document.getElementById(resultId);
  try {
    line.textContent = await action();
    line.className = "result muted";
  } catch (error) {
    line.textContent = error.message;
    line.className = "result bad";
  }
}

function table(id, headers, rows) {
  const head = headers.map((h) => `<th>${esc(h)}</th>`).join("");
  return `<table id="${id}"><thead><tr>${head}</tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

async function clusterView() {
  const c = await api("/api/console/cluster");
  clusterId = c.cluster_id;
  const brokers = c.brokers.map((b) => `<tr data-broker="${b.id}">
      <td>${b.id}${b.id === c.controller ? " (controller)" : ""}</td>
      <td>${esc(b.host ?? "")}${b.port ? ":" + b.port : ""}</td><td>${esc(b.rack ?? "")}</td>
      <td class="state ${b.alive ? "up" : "down"}">${b.alive ? "up" : "down"}</td>
      <td class="num">${b.leaders}</td><td class="num">${b.replicas}</td></tr>`);
  const problems = [
    ...c.offline.map((p) => `<li class="bad offline">${esc(p)} offline</li>`),
    ...c.under_min_isr.map((p) => `<li class="bad under-min-isr">${esc(p)} under min ISR (acks=all producers refused)</li>`),
    ...c.under_replicated.map((p) => `<li class="bad under-replicated">${esc(p)} under-replicated</li>`),
  ];
  const more = problems.length - MAX_ROWS;  // the cards count them all
  if (more > 0) problems.splice(MAX_ROWS, more, `<li class="muted" id="problems-more">and ${more} more</li>`);
  page.innerHTML = `<h1>Cluster <span class="muted">${esc(c.cluster_id)}</span></h1>
    <div class="cards">
      <div class="card">Brokers up<b id="brokers-up">${c.brokers.filter((b) => b.alive).length} / ${c.brokers.length}</b></div>
      <div class="card">Partitions<b>${c.partitions}</b></div>
      <div class="card">Under-replicated<b id="under-replicated-count">${c.under_replicated.length}</b></div>
      <div class="card">Under min ISR<b id="under-min-isr-count">${c.under_min_isr.length}</b></div>
      <div class="card">Offline<b id="offline-count">${c.offline.length}</b></div>
    </div>
    ${table("brokers", ["Broker", "Address", "Rack", "State", "Leaders", "Replicas"], brokers)}
    <h2>Partitions needing attention</h2>
    <ul id="problems">${problems.join("") || '<li class="muted">none</li>'}</ul>
    ${(await featuresReady).metrics ? await metricsView() : ""}`;
}

function ms(value) { return value === undefined ? "-" : value.toFixed(1); }

// Throughput (rates between samples of the nodes' totals) and Produce/Fetch p99 latency, over
// the samples of the last minutes the console keeps.
async function metricsView() {
  const m = await api("/api/console/metrics");
  const metricsHistory = m.history;
  const rates = (name) => metricsHistory.slice(1).map((now, i) => {
    const before = metricsHistory[i];
    return Math.max(0, now.totals[name] - before.totals[name]) / Math.max(0.001, now.at - before.at);
  });
  const p99 = (api) => metricsHistory.map((s) => s.p99_ms[api] ?? 0);
  const messages = rates("messages_in");
  const errors = m.errors.map((e) => `<li class="bad">${esc(e)}</li>`).join("");
  return `<h2>Throughput and latency <span class="muted">from ${m.scraped} of ${m.nodes} nodes</span></h2>
    ${errors ? `<ul id="metrics-errors">${errors}</ul>` : ""}
    <div class="cards">
      <div class="card">Records in, total<b id="messages-in-total">${m.totals.messages_in}</b></div>
      <div class="card">Records in/s<b id="messages-in-rate">${Math.round(messages.at(-1) ?? 0)}</b></div>
      <div class="card">Produce p99 ms<b id="produce-p99">${ms(m.p99_ms.Produce)}</b></div>
      <div class="card">Fetch p99 ms<b id="fetch-p99">${ms(m.p99_ms.Fetch)}</b></div>
    </div>
    <h3>Records in per second</h3>${chart("throughput-chart", messages, "records/s")}
    <h3>Bytes in and out per second</h3>${chart("bytes-in-chart", rates("bytes_in"), "bytes/s in")}
      ${chart("bytes-out-chart", rates("bytes_out"), "bytes/s out")}
    <h3>Produce p99 latency</h3>${chart("latency-chart", p99("Produce"), "ms")}`;
}

function health(t) {
  const problems = [[t.offline, "offline"], [t.under_min_isr, "under min ISR"], [t.under_replicated, "under-replicated"]];
  return problems.filter(([n]) => n).map(([n, what]) => `${n} ${what}`).join(", ") || "ok";
}

// The topics are painted from the cluster's metadata first; their records held (every
// partition's earliest and latest offsets: the slow part with many partitions) are filled in
// when counted.
async function topicsView() {
  const rows = (await api("/api/console/topics")).map((t) => `<tr data-topic="${esc(t.name)}">
      <td><a href="#/topics/${encodeURIComponent(t.name)}">${esc(t.name)}</a>${t.internal ? ' <span class="muted">internal</span>' : ""}</td>
      <td class="num">${t.partitions}</td><td class="num">${t.replication_factor}</td>
      <td class="num records">${recordsHeld[t.name] ?? "…"}</td>
      <td class="health ${t.under_replicated || t.offline ? "bad" : ""}">${health(t)}</td></tr>`);
  page.innerHTML = `<h1>Topics</h1>${table("topics", ["Topic", "Partitions", "Replication", "Records", "Health"], rows)}`;
  for (const t of await api("/api/console/topics?records=true")) recordsHeld[t.name] = t.records;
  page.querySelectorAll("#topics tr[data-topic]").forEach((row) => {
    row.querySelector("td.records").textContent = recordsHeld[row.dataset.topic] ?? "…";
  });
}

async function topicView(name) {
  const t = await api(`/api/console/topics/${encodeURIComponent(name)}`);
  const keep = page.querySelector("#browse") ? readBrowse() : { partition: 0, offset: 0, time: "" };
  const parts = t.partitions.map((p) => `<tr data-partition="${p.partition}">
      <td>${p.partition}</td><td>${p.leader ?? '<span class="bad">none</span>'}</td>
      <td>${p.replicas.join(", ")}</td><td class="isr ${p.isr.length < p.replicas.length ? "bad" : ""}">${p.isr.join(", ")}${p.under_min_isr ? " (under min ISR)" : ""}</td>
      <td class="num">${p.earliest}</td><td class="num">${p.latest}</td></tr>`);
  const configs = t.configs.filter((c) => !c.default).map((c) =>
    `<tr data-config="${esc(c.name)}"><td>${esc(c.name)}</td><td>${esc(c.value)}</td></tr>`);
  const editable = t.configs.filter((c) => !c.read_only).map((c) => `<option value="${esc(c.name)}">`);
  const from = keep.time ? `timestamp=${timestampOf(keep.time)}` : `offset=${keep.offset}`;
  const records = await api(`/api/console/topics/${encodeURIComponent(name)}/records?partition=${keep.partition}&${from}&limit=50`);
  const recordRows = records.records.map((r) => `<tr><td class="num">${r.offset}</td>
      <td>${r.timestamp ? new Date(r.timestamp).toISOString() : ""}</td><td>${esc(r.key)}</td>
      <td class="value">${esc(r.value)}</td><td>${esc(r.headers.map((h) => h.join(":")).join(", "))}</td></tr>`);
  page.innerHTML = `<h1>Topic ${esc(name)}</h1>
    ${table("partitions", ["Partition", "Leader", "Replicas", "In sync", "Earliest", "Latest"], parts)}
    <h2>Settings (not default)</h2>
    ${table("configs", ["Setting", "Value"], configs.length ? configs : ['<tr><td colspan="2" class="muted">all default</td></tr>'])}
    <form id="config-edit" onsubmit="return false">setting <input id="config-name" list="config-names" size="28">
      <datalist id="config-names">${editable.join("")}</datalist> value <input id="config-value">
      <button id="config-set" type="button">Set</button> <button id="config-delete" type="button">Reset to default</button>
      <span id="config-result" class="result muted"></span></form>
    <h2>Records</h2>
    <form id="browse" onsubmit="return false">partition <input id="browse-partition" type="number" min="0" value="${keep.partition}">
      from offset <input id="browse-offset" type="number" min="0" value="${keep.offset}">
      or from time <input id="browse-time" placeholder="2026-11-28T22:00:00Z or ms" value="${esc(keep.time)}">
      <span id="browse-from" class="muted">from offset ${records.from}</span></form>
    ${table("records", ["Offset", "Timestamp", "Key", "Value", "Headers"], recordRows)}
    <h2>Produce a record</h2>
    <form id="produce" onsubmit="return false">key <input id="produce-key"> value <input id="produce-value" size="40">
      <button id="produce-send" type="button">Send</button> <span id="produce-result" class="result muted"></span></form>`;
  page.querySelector("#produce-send").onclick = () => produce(name);
  page.querySelector("#config-set").onclick = () => alterConfig(name, "SET");
  page.querySelector("#config-delete").onclick = () => alterConfig(name, "DELETE");
}

// Changes one of a topic's settings with the proxy's v3 batch alter (IncrementalAlterConfigs).
function alterConfig(topic, operation) {
  return act("config-result", async () => {
    const setting = valueOf("config-name").trim();
    if (!setting) throw new Error("name a setting");
    const change = { name: setting, operation };
    if (operation === "SET") change.value = valueOf("config-value");
    await api(`/v3/clusters/${await currentClusterId()}/topics/${encodeURIComponent(topic)}/configs:alter`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ data: [change] }),
    });
    return operation === "SET" ? `set ${setting}=${change.value}` : `${setting} back to its default`;
  });
}

function valueOf(id) { return document.getElementById(id)?.value ?? ""; }
function setValue(id, value) { const e = document.getElementById(id); if (e) e.value = value; }
function readBrowse() {
  return { partition: Number(valueOf("browse-partition") || 0), offset: Number(valueOf("browse-offset") || 0), time: valueOf("browse-time").trim() };
}

// A time typed as milliseconds since the epoch or as an ISO date and time.
function timestampOf(text) {
  const ms = /^\d+$/.test(text) ? Number(text) : Date.parse(text);
  if (Number.isNaN(ms)) throw new Error(`not a time: ${text} (an ISO date and time, or ms since the epoch)`);
  return ms;
}

function produce(topic) {
  return act("produce-result", async () => {
    const key = valueOf("produce-key");
    const body = { value: { type: "STRING", data: valueOf("produce-value") } };
    if (key) body.key = { type: "STRING", data: key };
    try {
      const answer = await api(`/v3/clusters/${await currentClusterId()}/topics/${encodeURIComponent(topic)}/records`, {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      return `sent: partition ${answer.partition_id}, offset ${answer.offset}`;
    } catch (error) {
      throw new Error(`not sent: ${error.message}`);
    }
  });
}

async function groupsView() {
  const rows = (await api("/api/console/groups")).map((g) => `<tr data-group="${esc(g.group)}">
      <td><a href="#/groups/${encodeURIComponent(g.group)}">${esc(g.group)}</a></td><td>${esc(g.state)}</td>
      <td class="num">${g.members}</td><td class="num lag">${g.lag}</td></tr>`);
  page.innerHTML = `<h1>Consumer groups</h1>${table("groups", ["Group", "State", "Members", "Lag"], rows)}`;
}

// A line chart of `points` (one a refresh); `what` names their unit in the caption.
function chart(id, points, what) {
  if (points.length < 2) return `<p class="muted">${esc(what)} over time appear after a few refreshes</p>`;
  const top = Math.max(1, ...points);
  const xs = points.map((v, i) => `${(i * 600) / (points.length - 1)},${120 - (v * 110) / top}`);
  return `<svg class="chart" id="${id}" width="600" height="125"><polyline points="${xs.join(" ")}"/></svg>
    <div class="muted">max ${Math.round(top * 10) / 10} ${esc(what)} over the last ${points.length} refreshes</div>`;
}

async function groupView(name) {
  const g = await api(`/api/console/groups/${encodeURIComponent(name)}`);
  const total = g.lag.reduce((sum, l) => sum + l.lag, 0);
  const history = (lagHistory[name] = [...(lagHistory[name] ?? []), total].slice(-LAG_POINTS));
  const members = g.members.map((m) => `<tr><td>${esc(m.member)}</td><td>${esc(m.client)}</td>
      <td>${esc(m.host)}</td><td>${esc(m.assignment.join(", "))}</td></tr>`);
  // with more partitions than a table shows, those lagging most
  const shown = g.lag.length > MAX_ROWS ? [...g.lag].sort((a, b) => b.lag - a.lag).slice(0, MAX_ROWS) : g.lag;
  const lags = shown.map((l) => `<tr><td>${esc(l.topic)}</td><td>${l.partition}</td>
      <td class="num">${l.current}</td><td class="num">${l.end}</td><td class="num lag">${l.lag}</td></tr>`);
  page.innerHTML = `<h1>Group ${esc(name)} <span class="muted">${esc(g.state)}</span></h1>
    <div class="cards"><div class="card">Total lag<b id="total-lag">${total}</b></div></div>
    ${chart("lag-chart", history, "records behind")}
    <h2>Members</h2>${table("members", ["Member", "Client", "Host", "Partitions"], members)}
    <h2>Lag per partition${shown.length < g.lag.length ? ` <span class="muted" id="lags-shown">the ${shown.length} of ${g.lag.length} lagging most</span>` : ""}</h2>
    ${table("lags", ["Topic", "Partition", "Committed", "End", "Lag"], lags)}
    <h2>Reset offsets</h2>
    <form id="reset" onsubmit="return false">topic <input id="reset-topic" placeholder="every topic of the group">
      to <select id="reset-to"><option>earliest</option><option>latest</option><option>timestamp</option><option>offset</option></select>
      <input id="reset-value" placeholder="ms since epoch, or offset">
      <button id="reset-preview" type="button">Dry run</button>
      <span id="reset-result" class="result muted"></span></form>
    ${planView(resetPlans[name])}`;
  page.querySelector("#reset-preview").onclick = () => resetOffsets(name, true);
  page.querySelector("#reset-apply")?.addEventListener("click", () => resetOffsets(name, false));
}

function planView(plan) {
  if (!plan) return "";
  const rows = plan.offsets.map((o) => `<tr><td>${esc(o.topic)}</td><td>${o.partition}</td>
      <td class="num">${o.current < 0 ? "none" : o.current}</td><td class="num new-offset">${o.new}</td></tr>`);
  return `${table("reset-plan", ["Topic", "Partition", "Committed", "New offset"], rows)}
    <p><button id="reset-apply" type="button">Apply this reset</button></p>`;
}

// A reset's dry run first (shown as a plan), then the same reset applied.
function resetOffsets(group, dryRun) {
  return act("reset-result", async () => {
    const request = dryRun ? {
      topic: valueOf("reset-topic").trim() || null, to: valueOf("reset-to"), value: valueOf("reset-value").trim(),
    } : resetPlans[group].request;
    delete resetPlans[group];
    const answer = await api(`/api/console/groups/${encodeURIComponent(group)}/offsets:reset`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ ...request, dry_run: dryRun }),
    });
    if (dryRun) resetPlans[group] = { request, offsets: answer.offsets };
    return dryRun ? `dry run: ${answer.offsets.length} partitions, not yet applied` : `reset ${answer.offsets.length} partitions`;
  }).then(schedule);
}

async function schemasView() {
  const s = await api("/api/console/schemas");
  const rows = s.subjects.map((v) => `<tr data-subject="${esc(v.subject)}">
      <td><a href="#/schemas/${encodeURIComponent(v.subject)}">${esc(v.subject)}</a></td>
      <td class="num">${v.version}</td><td class="num">${v.id}</td><td>${esc(v.type)}</td></tr>`);
  page.innerHTML = `<h1>Schemas <span class="muted">compatibility <span id="global-compatibility">${esc(s.compatibility ?? "")}</span></span></h1>
    ${table("subjects", ["Subject", "Latest version", "Schema id", "Type"], rows)}`;
}

async function schemaView(subject) {
  const range = valueOf("diff-from") ? `?from=${valueOf("diff-from")}&to=${valueOf("diff-to")}` : "";
  const s = await api(`/api/console/schemas/${encodeURIComponent(subject)}${range}`);
  const rows = s.versions.map((v) => `<tr data-version="${v.version}"><td class="num">${v.version}</td>
      <td class="num">${v.id}</td><td>${esc(v.type)}</td></tr>`);
  const choices = (chosen) => s.versions.map((v) =>
    `<option${v.version === chosen ? " selected" : ""}>${v.version}</option>`).join("");
  const lines = s.diff.lines.map(([sign, text]) =>
    `<span class="${sign === "+" ? "added" : sign === "-" ? "removed" : ""}">${esc(sign + " " + text)}</span>`);
  page.innerHTML = `<h1>Subject ${esc(subject)}</h1>
    <div class="cards"><div class="card">Compatibility<b id="compatibility">${esc(s.compatibility ?? "")}</b></div>
      <div class="card">Versions<b>${s.versions.length}</b></div></div>
    ${table("versions", ["Version", "Schema id", "Type"], rows)}
    <h2>Diff</h2>
    <form id="diff" onsubmit="return false">version <select id="diff-from">${choices(s.diff.from)}</select>
      to <select id="diff-to">${choices(s.diff.to)}</select></form>
    <pre id="schema-diff" class="diff">${lines.join("\n")}</pre>`;
  page.querySelectorAll("#diff select").forEach((e) => { e.onchange = schedule; });
}

async function connectorsView() {
  const rows = (await api("/api/console/connectors")).map((c) => `<tr data-connector="${esc(c.name)}">
      <td>${esc(c.name)}</td><td>${esc(c.type)}</td><td class="muted">${esc(c.class)}</td>
      <td class="state ${c.state === "FAILED" ? "bad" : c.state === "RUNNING" ? "up" : ""}">${esc(c.state)}</td>
      <td>${esc(c.tasks.map((t) => `${t.id}: ${t.state}`).join(", "))}</td>
      <td class="error bad">${esc(c.error ?? "")}</td>
      <td>${["pause", "resume", "restart"].map((a) =>
        `<button type="button" data-action="${a}" data-name="${esc(c.name)}">${a}</button>`).join(" ")}</td></tr>`);
  page.innerHTML = `<h1>Connectors</h1>
    ${table("connectors", ["Connector", "Type", "Class", "State", "Tasks", "Error", ""], rows)}
    <p><span id="connector-result" class="result muted"></span></p>`;
  page.querySelectorAll("#connectors button").forEach((b) => {
    b.onclick = () => act("connector-result", async () => {
      await api(`/api/console/connectors/${encodeURIComponent(b.dataset.name)}/${b.dataset.action}`, { method: "POST" });
      return `${b.dataset.action}: ${b.dataset.name}`;
    }).then(schedule);
  });
}

async function sqlView() {
  const s = await api("/api/console/sql");
  const queries = s.queries.map((q) => `<tr data-query="${esc(q.id)}">
      <td>${esc(q.id)}</td><td class="state ${q.state === "ERROR" ? "bad" : q.state === "RUNNING" ? "up" : ""}">${esc(q.state)}</td>
      <td>${esc(q.sinks.join(", "))}</td><td class="muted">${esc(q.statement)}</td>
      <td class="error bad">${esc(q.error ?? "")}</td>
      <td><button type="button" data-terminate="${esc(q.id)}">terminate</button></td></tr>`);
  const sources = s.sources.map((x) => `<tr data-source="${esc(x.name)}"><td>${esc(x.name)}</td>
      <td>${esc(x.kind)}</td><td>${esc(x.topic)}</td><td>${esc(x.key_format)}</td><td>${esc(x.value_format)}</td></tr>`);
  page.innerHTML = `<h1>SQL</h1>
    <h2>Persistent queries</h2>
    ${table("queries", ["Query", "State", "Sinks", "Statement", "Error", ""], queries.length ? queries : ['<tr><td colspan="6" class="muted">none</td></tr>'])}
    <p><span id="query-result" class="result muted"></span></p>
    <h2>Streams and tables</h2>
    ${table("sources", ["Name", "Kind", "Topic", "Key format", "Value format"], sources)}`;
  page.querySelectorAll("#queries button").forEach((b) => {
    b.onclick = () => act("query-result", async () => {
      await api(`/api/console/sql/queries/${encodeURIComponent(b.dataset.terminate)}/terminate`, { method: "POST" });
      return `terminated ${b.dataset.terminate}`;
    }).then(schedule);
  });
}

async function render() {
  const [, view, name] = (location.hash || "#/cluster").split("/").map(decodeURIComponent);
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === view));
  const status = document.getElementById("status");
  const kept = location.hash === renderedHash ? saveInputs() : null;
  try {
    if (view === "topics" && name) await topicView(name);
    else if (view === "topics") await topicsView();
    else if (view === "groups" && name) await groupView(name);
    else if (view === "groups") await groupsView();
    else if (view === "schemas" && name) await schemaView(name);
    else if (view === "schemas") await schemasView();
    else if (view === "connectors") await connectorsView();
    else if (view === "sql") await sqlView();
    else await clusterView();
    if (kept) restoreInputs(kept);
    renderedHash = location.hash;
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
    status.className = "muted";
  } catch (error) {
    status.textContent = error.message;
    status.className = "bad";
  }
}

function schedule() {
  clearTimeout(timer);
  render().finally(() => { timer = setTimeout(schedule, REFRESH_MS); });
}

featuresReady.then((f) => {  // without them, the pages for strom itself still work
  document.getElementById("nav-schemas").hidden = !f.schemas;
  document.getElementById("nav-connectors").hidden = !f.connectors;
  document.getElementById("nav-sql").hidden = !f.sql;
  document.getElementById("logout").hidden = !f.login;
});
window.addEventListener("hashchange", () => {
  page.innerHTML = '<p class="muted">loading</p>';  // no button of the page left acts meanwhile
  schedule();
});
schedule();
