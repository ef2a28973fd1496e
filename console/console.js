// The Lattice console: plain JavaScript over the node's HTTP surface
// (CloudKit Web Services, /api/… and the event stream). No build step, no CDN.
"use strict";

const state = { token: null, container: null, database: "private", zone: null, tab: "records", record: null,
                records: new Map(), columns: [], recordsToken: null, events: null, node: null, refreshTimer: null, zonesTimer: null };
const $ = (id) => document.getElementById(id);

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== undefined && value !== null) node.setAttribute(key, value);
  }
  for (const child of children.flat()) node.append(child instanceof Node ? child : document.createTextNode(child ?? ""));
  return node;
}

// ---- Talking to the node ----

class AuthError extends Error {}

async function api(path, body) {
  const response = await fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: { "Authorization": "Bearer " + state.token, ...(body === undefined ? {} : { "Content-Type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => ({}));
  if (response.status === 401) throw new AuthError(json.reason || "the token was refused");
  if (!response.ok) throw new Error(json.reason || `${response.status} ${response.statusText}`);
  return json;
}

const ws = (operation, body) => api(`/database/1/${encodeURIComponent(state.container)}/development/${state.database}/${operation}`, body);

// ---- Formatting ----

function time(ms) {
  if (ms === undefined || ms === null) return "";
  const date = new Date(Number(ms));
  const today = new Date();
  return date.toDateString() === today.toDateString() ? date.toLocaleTimeString() : date.toLocaleString();
}

function bytes(count) {
  const units = ["bytes", "KB", "MB", "GB", "TB"];
  let value = Number(count) || 0, unit = 0;
  while (value >= 1000 && unit < units.length - 1) { value /= 1000; unit++; }
  return unit === 0 ? `${value} bytes` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

const shortID = (id) => (id || "").split("-")[0] || (id || "").slice(0, 8);

function formatValue(field) {
  if (!field) return "";
  const { value, type = "" } = field;
  if (type.endsWith("_LIST") && Array.isArray(value)) return value.map((item) => formatValue({ value: item, type: type.slice(0, -5) })).join(", ");
  switch (type) {
    case "TIMESTAMP": return time(value);
    case "REFERENCE": return "→ " + (value && value.recordName);
    case "LOCATION": return value ? `${Number(value.latitude).toFixed(4)}, ${Number(value.longitude).toFixed(4)}` : "";
    case "ASSETID": return value ? `asset ${String(value.fileChecksum).slice(0, 10)}… (${bytes(value.size)})${value.local === false ? ", not here yet" : ""}` : "";
    case "BYTES": return `${Math.floor(String(value).length * 3 / 4)} bytes`;
    default: return typeof value === "object" ? JSON.stringify(value) : String(value);
  }
}

function table(id, rows, empty) {
  const body = $(id).querySelector("tbody");
  body.replaceChildren(...rows);
  if (empty) $(empty).hidden = rows.length > 0;
}

// ---- Navigation ----

function show(tab) {
  state.tab = tab;
  for (const section of document.querySelectorAll(".tab")) section.hidden = section.id !== "tab-" + tab;
  for (const link of document.querySelectorAll("[data-tab]")) link.classList.toggle("active", link.dataset.tab === tab);
  for (const link of document.querySelectorAll("#zones a")) link.classList.toggle("active", tab === "records" && link.dataset.zone === state.zone);
  if (tab === "schema") loadSchema();
  if (tab === "query") fillQueryZones();
  if (["peers", "account", "assets"].includes(tab)) loadNode();
}

function failed(error) {
  if (error instanceof AuthError) return signOut(error.message);
  activity("error", error.message);
}

// ---- Zones and records ----

async function loadZones(reopen = true) {
  const { zones } = await ws("zones/list");
  const list = $("zones");
  list.replaceChildren(...zones.map((zone) => {
    const name = zone.zoneID.zoneName;
    const owner = zone.zoneID.ownerName;
    const label = state.database === "shared" ? `${name} (${shortID(owner)})` : name;
    return el("li", {}, el("a", { href: "#", "data-zone": name, onclick: (event) => { event.preventDefault(); openZone(name); } },
      el("span", {}, label), el("span", { class: "count" }, zone.recordCount ?? "")));
  }));
  if (!zones.some((zone) => zone.zoneID.zoneName === state.zone)) {
    const first = zones.find((zone) => zone.zoneID.zoneName !== "_defaultZone") || zones[0];
    state.zone = first ? first.zoneID.zoneName : null;
  }
  for (const link of document.querySelectorAll("#zones a")) link.classList.toggle("active", state.tab === "records" && link.dataset.zone === state.zone);
  if (reopen && state.zone && state.tab === "records") openZone(state.zone);
}

async function openZone(name) {
  state.zone = name;
  state.records = new Map();
  state.recordsToken = null;
  $("zone-title").textContent = name;
  show("records");
  await loadMoreRecords();
}

async function loadMoreRecords() {
  const page = await ws("records/changes", { zoneID: { zoneName: state.zone }, resultsLimit: 200, ...(state.recordsToken ? { syncToken: state.recordsToken } : {}) });
  for (const entry of page.records) {
    if (entry.deleted) state.records.delete(entry.recordName); else state.records.set(entry.recordName, entry);
  }
  state.recordsToken = page.syncToken;
  $("more-records").hidden = !page.moreComing;
  renderRecords();
}

function recordRow(record, flash) {
  return el("tr", { class: "clickable" + (flash ? " flash" : ""), "data-record": record.recordName, onclick: () => openRecord(record.recordName) },
    el("td", { class: "mono" }, record.recordName), el("td", {}, record.recordType),
    ...state.columns.map((name) => el("td", {}, formatValue(record.fields?.[name]))),
    el("td", {}, time(record.modified?.timestamp)), el("td", { class: "mono" }, (record.modified?.deviceID || "").slice(0, 8)));
}

function countRecords() {
  const count = state.records.size;
  $("zone-count").textContent = `${count} record${count === 1 ? "" : "s"}`;
  $("records-empty").hidden = count > 0;
}

function renderRecords() {
  const records = [...state.records.values()];
  const counts = new Map();
  for (const record of records) for (const name of Object.keys(record.fields || {})) counts.set(name, (counts.get(name) || 0) + 1);
  state.columns = [...counts.entries()].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).slice(0, 4).map(([name]) => name);
  $("records").querySelector("thead").replaceChildren(el("tr", {}, el("th", {}, "Name"), el("th", {}, "Type"),
    ...state.columns.map((name) => el("th", {}, name)), el("th", {}, "Modified"), el("th", {}, "By")));
  records.sort((a, b) => (b.modified?.timestamp || 0) - (a.modified?.timestamp || 0));
  table("records", records.map((record) => recordRow(record)), "records-empty");
  countRecords();
}

// A live change: its row alone is replaced (or added on top, or removed), the columns kept.
function updateRecordRow(name, record) {
  const body = $("records").querySelector("tbody");
  const existing = body.querySelector(`tr[data-record="${CSS.escape(name)}"]`);
  if (!record) existing?.remove();
  else if (existing) existing.replaceWith(recordRow(record, true));
  else body.prepend(recordRow(record, true));
  countRecords();
}

async function openRecord(name) {
  state.record = name;
  const detail = await api(`/api/record?database=${state.database}&zone=${encodeURIComponent(state.zone)}&name=${encodeURIComponent(name)}`);
  const record = detail.record;
  $("record-title").textContent = `${state.zone}/${record.recordName}`;
  $("record-meta").textContent = `${record.recordType} · tag ${record.recordChangeTag} · created ${time(record.created?.timestamp)} · modified ${time(record.modified?.timestamp)}`;
  const writes = new Map(detail.fieldWrites.map((write) => [write.field, write]));
  table("record-fields", Object.keys(record.fields).sort().map((field) => {
    const write = writes.get(field) || {};
    return el("tr", { "data-field": field }, el("td", { class: "mono" }, field), el("td", {}, el("span", { class: "tag" }, record.fields[field].type)),
      el("td", { class: "wrap" }, formatValue(record.fields[field])), el("td", { class: "mono" }, (write.replica || "").slice(0, 8)), el("td", {}, time(write.timestamp)));
  }));
  $("no-conflicts").hidden = detail.conflicts.length > 0;
  $("record-conflicts").hidden = detail.conflicts.length === 0;
  table("record-conflicts", detail.conflicts.map((conflict) => el("tr", {},
    el("td", { class: "mono" }, conflict.field), el("td", { class: "wrap" }, conflict.losingValue ? formatValue(conflict.losingValue) : "(removed)"),
    el("td", {}, `${conflict.losingWrite.deviceID.slice(0, 8)} at ${time(conflict.losingWrite.timestamp)}`),
    el("td", {}, `${conflict.winningWrite.deviceID.slice(0, 8)} at ${time(conflict.winningWrite.timestamp)}`))));
  show("record");
}

// ---- Query ----

function fillQueryZones() {
  const select = $("query-zone");
  const zones = [...document.querySelectorAll("#zones a")].map((link) => link.dataset.zone);
  const current = select.value || state.zone;
  select.replaceChildren(...zones.map((zone) => el("option", { value: zone }, zone)));
  if (zones.includes(current)) select.value = current;
}

async function runQuery(explain) {
  $("query-error").textContent = "";
  const sort = $("query-sort").value.split(/[\s,]+/).filter(Boolean);
  try {
    const result = await api("/api/query", { database: state.database, zone: $("query-zone").value, recordType: $("query-type").value.trim(),
      where: $("query-where").value, sort, limit: Number($("query-limit").value) || 50, explain });
    const explanation = result.explanation;
    $("query-explain").hidden = !explanation;
    if (explanation) {
      $("query-explain").textContent = [`plan: ${explanation.plan}`,
        ...explanation.estimates.map((estimate, index) => `  ${index === 0 ? "taken" : "weighed"}: ${estimate.plan}, ~${estimate.atLeast ? "≥" : ""}${estimate.rows} rows`),
        `read ${explanation.recordsRead} records (${explanation.rowsRead} rows) to return ${explanation.recordsReturned}`,
        ...explanation.suggestions.map((suggestion) => `an index would help: ${suggestion}`)].join("\n");
    }
    const columns = [...new Set(result.records.flatMap((record) => Object.keys(record.fields)))].sort().slice(0, 6);
    $("query-results").querySelector("thead").replaceChildren(el("tr", {}, el("th", {}, "Name"), ...columns.map((name) => el("th", {}, name)), el("th", {}, "Modified")));
    table("query-results", result.records.map((record) => el("tr", { class: "clickable", "data-record": record.recordName,
        onclick: () => { state.zone = $("query-zone").value; openRecord(record.recordName); } },
      el("td", { class: "mono" }, record.recordName), ...columns.map((name) => el("td", {}, formatValue(record.fields[name]))), el("td", {}, time(record.modified?.timestamp)))));
  } catch (error) {
    if (error instanceof AuthError) return signOut(error.message);
    $("query-error").textContent = error.message;
  }
}

// ---- Schema, node, peers, account, assets ----

async function loadSchema() {
  const schema = await api("/api/schema").catch(failed);
  if (!schema) return;
  $("schema-environment").textContent = `Environment: ${schema.environment}`;
  $("schema").replaceChildren(...schema.recordTypes.map((type) => el("div", { class: "schema-type" }, el("h3", {}, type.recordType),
    el("table", { class: "grid" }, el("thead", {}, el("tr", {}, el("th", {}, "Field"), el("th", {}, "Type"), el("th", {}, "Indexes"))),
      el("tbody", {}, type.fields.map((field) => el("tr", {}, el("td", { class: "mono" }, field.fieldName), el("td", {}, field.fieldType),
        el("td", {}, field.indexes.map((index) => el("span", { class: "tag" }, index.toLowerCase() + " "))))))))));
}

async function loadNode() {
  const node = await api("/api/node").catch(failed);
  if (!node) return;
  state.node = node;
  $("node-name").textContent = `${node.deviceName || shortID(node.deviceID)} · ${node.container}`;
  const status = node.status;
  const peers = status?.peers || [];
  table("peers", peers.map((peer) => {
    const verified = (peer.verified || []).filter((zone) => zone.differences === 0 && zone.inSyncAt);
    const behindHere = peer.zones.filter((zone) => zone.direction === "receiving").reduce((sum, zone) => sum + Math.max(0, zone.recordsTotal - zone.recordsDone), 0);
    const behindThere = peer.zones.filter((zone) => zone.direction === "sending").reduce((sum, zone) => sum + Math.max(0, zone.recordsTotal - zone.recordsDone), 0);
    return el("tr", { "data-peer": peer.deviceID, "data-state": peer.connected ? "connected" : "disconnected" },
      el("td", { class: "mono", title: peer.deviceID }, shortID(peer.deviceID)), el("td", { class: "mono" }, peer.address),
      el("td", {}, el("span", { class: "tag " + (peer.connected ? "good" : "bad") }, peer.connected ? "connected" : "disconnected")),
      el("td", {}, peer.access || ""), el("td", { class: "num" }, behindHere), el("td", { class: "num" }, behindThere),
      el("td", {}, verified.length ? `${verified.length} zone${verified.length === 1 ? "" : "s"} at ${time(Math.max(...verified.map((zone) => zone.inSyncAt)))}` : ""),
      el("td", { class: "num" }, peer.refusedRecords || 0), el("td", { class: "wrap" }, peer.lastError || ""));
  }), "peers-empty");
  const discovery = status?.discovery;
  $("discovery").textContent = !status ? "The node's status is not available." :
    discovery ? `mDNS ${discovery.state}${discovery.problem ? ": " + discovery.problem : ""}${discovery.advertisedAs ? " · advertised as " + discovery.advertisedAs : ""} · ${discovery.devices.length} device(s) seen` : "mDNS off";
  table("strangers", (status?.strangers?.sources || []).map((source) => el("tr", {}, el("td", { class: "mono" }, source.address),
    el("td", {}, source.reason), el("td", { class: "num" }, source.count), el("td", {}, time(source.last)))), "strangers-empty");
  $("account-id").textContent = `Account ${node.accountID}`;
  table("devices", node.devices.map((device) => el("tr", {}, el("td", { class: "mono", title: device.deviceID }, shortID(device.deviceID)),
    el("td", {}, device.name || ""), el("td", {}, device.isThisDevice ? el("span", { class: "tag good" }, "this device") : ""))));
  table("removed", node.removedDevices.map((device) => el("tr", {}, el("td", { class: "mono" }, shortID(device.deviceID)), el("td", {}, device.name || ""), el("td", {}, String(device.removedAt)))));
  table("shares", node.shares.map((share) => el("tr", {}, el("td", {}, share.zoneName), el("td", {}, share.isOwner ? "this account" : shortID(share.ownerName)),
    el("td", { class: "num" }, share.records), el("td", { class: "wrap" }, share.participants.map((participant) => `${shortID(participant.account)} (${participant.permission})`).join(", ")))));
  $("store-size").textContent = `The store holds ${bytes(node.storeBytes)} on disk.`;
  const transfers = status?.assets || [];
  table("transfers", transfers.map((transfer) => el("tr", {}, el("td", { class: "mono" }, String(transfer.asset || "").slice(0, 16) + "…"),
    el("td", {}, transfer.state), el("td", {}, `${bytes(transfer.bytesDone)} of ${bytes(transfer.bytesTotal)}`), el("td", {}, transfer.problem || ""))), "transfers-empty");
}

// ---- Live updates ----

function activity(kind, text) {
  const list = $("activity");
  list.prepend(el("li", { "data-kind": kind }, el("time", {}, new Date().toLocaleTimeString()), el("span", {}, text)));
  while (list.children.length > 300) list.lastChild.remove();
}

function describe(event) {
  switch (event.event) {
    case "connected": return `connected to ${shortID(event.peer)} at ${event.address}`;
    case "disconnected": return `disconnected from ${shortID(event.peer) || "a peer"}${event.reason ? ": " + event.reason : ""}`;
    case "syncFinished": return `${event.direction === "receiving" ? "received" : "sent"} ${event.zone} ${event.direction === "receiving" ? "from" : "to"} ${shortID(event.peer)}`;
    case "refused": return `refused untrusted device ${shortID(event.peer)} at ${event.address}`;
    case "writesRefused": return `refused ${event.records} record(s) of ${event.zone} from ${shortID(event.peer)}: ${event.reason}`;
    case "discovered": return `discovered ${shortID(event.peer)}${event.problem ? " (" + event.problem + ")" : ""}`;
    default: return null;
  }
}

function onRecordChange(data) {
  const change = JSON.parse(data);
  activity("record", `${change.reason.replace("record", "").toLowerCase()} ${change.zoneID.zoneName}/${change.recordName}`);
  clearTimeout(state.zonesTimer);
  state.zonesTimer = setTimeout(() => loadZones(false).catch(failed), 300);
  if (change.zoneID.zoneName !== state.zone) return;
  if (change.reason === "recordDeleted") state.records.delete(change.recordName); else state.records.set(change.recordName, change.record);
  if (state.tab === "records") updateRecordRow(change.recordName, change.record);
  if (state.tab === "record" && state.record === change.recordName && change.record) openRecord(change.recordName).catch(failed);
}

function onSyncEvent(data) {
  const event = JSON.parse(data);
  const text = describe(event);
  if (text) activity("sync", text);
  if (["connected", "disconnected", "syncFinished", "caughtUp", "refused", "writesRefused", "assetFetched"].includes(event.event)) {
    clearTimeout(state.refreshTimer);
    state.refreshTimer = setTimeout(() => loadNode(), 200);
  }
}

function setLive(on) {
  $("live").className = "live " + (on ? "on" : "off");
  $("live-text").textContent = on ? "live" : "reconnecting";
}

// The event stream read with fetch, not EventSource: the token goes in the
// Authorization header, never in a URL (where logs and proxies keep it).
// It reconnects as EventSource does, resuming from the last id it saw.
function connectEvents() {
  if (state.events) state.events.abort();
  const controller = new AbortController();
  state.events = controller;
  const url = `/database/1/${encodeURIComponent(state.container)}/development/${state.database}/events`;
  const handlers = { record: onRecordChange, sync: onSyncEvent };
  let lastID = null;
  const dispatch = (block) => {
    let event = "message", id = null;
    const data = [];
    for (const line of block.split("\n")) {
      if (line === "" || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
      else if (field === "id") id = value;
    }
    if (id !== null) lastID = id;
    if (handlers[event] && data.length) handlers[event](data.join("\n"));
  };
  (async () => {
    while (!controller.signal.aborted) {
      try {
        const headers = { "Authorization": "Bearer " + state.token, "Accept": "text/event-stream", ...(lastID ? { "Last-Event-ID": lastID } : {}) };
        const response = await fetch(url, { headers, signal: controller.signal, cache: "no-store" });
        if (response.status === 401) return signOut("the token was refused");
        if (!response.ok || !response.body) throw new Error(`the event stream answered ${response.status}`);
        setLive(true);
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value.replace(/\r\n?/g, "\n");
          let end;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            dispatch(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
      }
      setLive(false);
      await new Promise((resume) => setTimeout(resume, 1000));
    }
  })();
}

// ---- Start ----

function signOut(reason) {
  sessionStorage.removeItem("lattice-token");
  if (state.events) state.events.abort();
  $("app").hidden = true;
  $("login").hidden = false;
  $("login-error").textContent = reason || "";
}

async function start() {
  $("login").hidden = true;
  try {
    const node = await api("/api/node");
    state.container = node.container;
    $("app").hidden = false;
    await loadNode();
    await loadZones();
    connectEvents();
    document.body.dataset.ready = "true";
  } catch (error) {
    if (error instanceof AuthError) signOut(error.message); else { $("app").hidden = false; activity("error", error.message); }
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromLink) {
    sessionStorage.setItem("lattice-token", fromLink);
    history.replaceState(null, "", location.pathname);
  }
  state.token = sessionStorage.getItem("lattice-token");
  $("login-form").addEventListener("submit", (event) => {
    event.preventDefault();
    state.token = $("token").value.trim();
    sessionStorage.setItem("lattice-token", state.token);
    start();
  });
  $("database").addEventListener("change", () => { state.database = $("database").value; state.zone = null; loadZones().catch(failed); connectEvents(); });
  for (const link of document.querySelectorAll("[data-tab]")) link.addEventListener("click", (event) => { event.preventDefault(); show(link.dataset.tab); });
  $("back").addEventListener("click", () => openZone(state.zone).catch(failed));
  $("more-records").addEventListener("click", () => loadMoreRecords().catch(failed));
  $("query-form").addEventListener("submit", (event) => { event.preventDefault(); runQuery(false); });
  $("explain-query").addEventListener("click", () => runQuery(true));
  setInterval(() => { if (state.container && ["peers", "assets"].includes(state.tab)) loadNode(); }, 5000);
  if (state.token) start(); else signOut();
});
