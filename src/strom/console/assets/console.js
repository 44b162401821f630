// strom console: one page, routed by the URL's hash, every view refreshed every two seconds
// from the console's API (/api/console/...) and the REST proxy's (/v3/...).
"use strict";

const REFRESH_MS = 2000;
const LAG_POINTS = 90;
const lagHistory = {};  // group -> its total lag at each refresh, for the chart
let clusterId = null;
let timer = null;

const page = document.getElementById("page");

function esc(value) {
  return String(value ?? "").replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

async function api(path, options) {
  const answer = await fetch(path, options);
  const body = answer.status === 204 ? null : await answer.json();
  if (!answer.ok) throw new Error(body && body.message ? body.message : answer.statusText);
  return body;
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
    ...c.under_replicated.map((p) => `<li class="bad under-replicated">${esc(p)} under-replicated</li>`),
  ];
  page.innerHTML = `<h1>Cluster <span class="muted">${esc(c.cluster_id)}</span></h1>
    <div class="cards">
      <div class="card">Brokers up<b id="brokers-up">${c.brokers.filter((b) => b.alive).length} / ${c.brokers.length}</b></div>
      <div class="card">Partitions<b>${c.partitions}</b></div>
      <div class="card">Under-replicated<b id="under-replicated-count">${c.under_replicated.length}</b></div>
      <div class="card">Offline<b id="offline-count">${c.offline.length}</b></div>
    </div>
    ${table("brokers", ["Broker", "Address", "Rack", "State", "Leaders", "Replicas"], brokers)}
    <h2>Partitions needing attention</h2>
    <ul id="problems">${problems.join("") || '<li class="muted">none</li>'}</ul>`;
}

async function topicsView() {
  const rows = (await api("/api/console/topics")).map((t) => `<tr data-topic="${esc(t.name)}">
      <td><a href="#/topics/${encodeURIComponent(t.name)}">${esc(t.name)}</a>${t.internal ? ' <span class="muted">internal</span>' : ""}</td>
      <td class="num">${t.partitions}</td><td class="num">${t.replication_factor}</td>
      <td class="num records">${t.records}</td>
      <td class="${t.under_replicated || t.offline ? "bad" : ""}">${t.offline ? t.offline + " offline" : t.under_replicated ? t.under_replicated + " under-replicated" : "ok"}</td></tr>`);
  page.innerHTML = `<h1>Topics</h1>${table("topics", ["Topic", "Partitions", "Replication", "Records", "Health"], rows)}`;
}

async function topicView(name) {
  const t = await api(`/api/console/topics/${encodeURIComponent(name)}`);
  const keep = page.querySelector("#browse") ? readBrowse() : { partition: 0, offset: 0 };
  const parts = t.partitions.map((p) => `<tr data-partition="${p.partition}">
      <td>${p.partition}</td><td>${p.leader ?? '<span class="bad">none</span>'}</td>
      <td>${p.replicas.join(", ")}</td><td class="${p.isr.length < p.replicas.length ? "bad" : ""}">${p.isr.join(", ")}</td>
      <td class="num">${p.earliest}</td><td class="num">${p.latest}</td></tr>`);
  const configs = t.configs.filter((c) => !c.default).map((c) =>
    `<tr><td>${esc(c.name)}</td><td>${esc(c.value)}</td></tr>`);
  const records = await api(`/api/console/topics/${encodeURIComponent(name)}/records?partition=${keep.partition}&offset=${keep.offset}&limit=50`);
  const recordRows = records.records.map((r) => `<tr><td class="num">${r.offset}</td>
      <td>${r.timestamp ? new Date(r.timestamp).toISOString() : ""}</td><td>${esc(r.key)}</td>
      <td class="value">${esc(r.value)}</td><td>${esc(r.headers.map((h) => h.join(":")).join(", "))}</td></tr>`);
  const focused = document.activeElement && document.activeElement.id;
  const typed = { key: valueOf("produce-key"), value: valueOf("produce-value"), result: page.querySelector("#produce-result")?.textContent ?? "" };
  page.innerHTML = `<h1>Topic ${esc(name)}</h1>
    ${table("partitions", ["Partition", "Leader", "Replicas", "In sync", "Earliest", "Latest"], parts)}
    <h2>Settings (not default)</h2>
    ${table("configs", ["Setting", "Value"], configs.length ? configs : ['<tr><td colspan="2" class="muted">all default</td></tr>'])}
    <h2>Records</h2>
    <form id="browse" onsubmit="return false">partition <input id="browse-partition" type="number" min="0" value="${keep.partition}">
      from offset <input id="browse-offset" type="number" min="0" value="${keep.offset}"></form>
    ${table("records", ["Offset", "Timestamp", "Key", "Value", "Headers"], recordRows)}
    <h2>Produce a record</h2>
    <form id="produce" onsubmit="return false">key <input id="produce-key"> value <input id="produce-value" size="40">
      <button id="produce-send" type="button">Send</button> <span id="produce-result" class="muted"></span></form>`;
  setValue("produce-key", typed.key);
  setValue("produce-value", typed.value);
  page.querySelector("#produce-result").textContent = typed.result;
  if (focused) document.getElementById(focused)?.focus();
  page.querySelector("#produce-send").onclick = () => produce(name);
}

function valueOf(id) { return document.getElementById(id)?.value ?? ""; }
function setValue(id, value) { const e = document.getElementById(id); if (e) e.value = value; }
function readBrowse() { return { partition: Number(valueOf("browse-partition") || 0), offset: Number(valueOf("browse-offset") || 0) }; }

async function produce(topic) {
  const result = page.querySelector("#produce-result");
  const key = valueOf("produce-key");
  const body = { value: { type: "STRING", data: valueOf("produce-value") } };
  if (key) body.key = { type: "STRING", data: key };
  try {
    if (!clusterId) clusterId = (await api("/api/console/cluster")).cluster_id;
    const answer = await api(`/v3/clusters/${clusterId}/topics/${encodeURIComponent(topic)}/records`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
    });
    result.textContent = `sent: partition ${answer.partition_id}, offset ${answer.offset}`;
  } catch (error) {
    result.textContent = `not sent: ${error.message}`;
  }
}

async function groupsView() {
  const rows = (await api("/api/console/groups")).map((g) => `<tr data-group="${esc(g.group)}">
      <td><a href="#/groups/${encodeURIComponent(g.group)}">${esc(g.group)}</a></td><td>${esc(g.state)}</td>
      <td class="num">${g.members}</td><td class="num lag">${g.lag}</td></tr>`);
  page.innerHTML = `<h1>Consumer groups</h1>${table("groups", ["Group", "State", "Members", "Lag"], rows)}`;
}

function chart(points) {
  if (points.length < 2) return '<p class="muted">lag over time appears after a few refreshes</p>';
  const top = Math.max(1, ...points);
  const xs = points.map((v, i) => `${(i * 600) / (points.length - 1)},${120 - (v * 110) / top}`);
  return `<svg class="chart" id="lag-chart" width="600" height="125"><polyline points="${xs.join(" ")}"/></svg>
    <div class="muted">max ${top} over the last ${points.length} refreshes</div>`;
}

async function groupView(name) {
  const g = await api(`/api/console/groups/${encodeURIComponent(name)}`);
  const total = g.lag.reduce((sum, l) => sum + l.lag, 0);
  const history = (lagHistory[name] = [...(lagHistory[name] ?? []), total].slice(-LAG_POINTS));
  const members = g.members.map((m) => `<tr><td>${esc(m.member)}</td><td>${esc(m.client)}</td>
      <td>${esc(m.host)}</td><td>${esc(m.assignment.join(", "))}</td></tr>`);
  const lags = g.lag.map((l) => `<tr><td>${esc(l.topic)}</td><td>${l.partition}</td>
      <td class="num">${l.current}</td><td class="num">${l.end}</td><td class="num lag">${l.lag}</td></tr>`);
  page.innerHTML = `<h1>Group ${esc(name)} <span class="muted">${esc(g.state)}</span></h1>
    <div class="cards"><div class="card">Total lag<b id="total-lag">${total}</b></div></div>
    ${chart(history)}
    <h2>Members</h2>${table("members", ["Member", "Client", "Host", "Partitions"], members)}
    <h2>Lag per partition</h2>${table("lags", ["Topic", "Partition", "Committed", "End", "Lag"], lags)}`;
}

async function render() {
  const [, view, name] = (location.hash || "#/cluster").split("/").map(decodeURIComponent);
  document.querySelectorAll("nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === view));
  const status = document.getElementById("status");
  try {
    if (view === "topics" && name) await topicView(name);
    else if (view === "topics") await topicsView();
    else if (view === "groups" && name) await groupView(name);
    else if (view === "groups") await groupsView();
    else await clusterView();
    status.textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    status.textContent = `cannot reach strom: ${error.message}`;
  }
}

function schedule() {
  clearTimeout(timer);
  render().finally(() => { timer = setTimeout(schedule, REFRESH_MS); });
}

window.addEventListener("hashchange", schedule);
schedule();
