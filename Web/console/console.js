// The operator console at /console/: live calls, push delivery per channel with the newest
// failures, a user's devices, gateway apps, webhook endpoints and their recent deliveries, and
// three charts drawn here as SVG from GET /admin/console. Everything is read with the admin key
// (kept in this tab's sessionStorage) and refreshed every 5 seconds. Text from the server is
// only ever set with textContent.

import { SwitchboardClient, SwitchboardError } from "/sdk/switchboard.js";

/** @param {string} id @returns {any} an element of this page */
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const COLORS = ["#2a8", "#36c", "#d92", "#c33", "#93c", "#3aa", "#888"];
const admin = new SwitchboardClient();
let timer = null;

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (className) td.className = className;
  return td;
}

function fill(tableId, rows, empty = "Nothing here.") {
  const body = $(tableId).querySelector("tbody");
  body.replaceChildren();
  for (const cells of rows) {
    const tr = document.createElement("tr");
    tr.append(...cells);
    body.append(tr);
  }
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = cell(empty, "muted");
    td.colSpan = $(tableId).querySelectorAll("th").length;
    tr.append(td);
    body.append(tr);
  }
}

const time = (iso) => (iso ? new Date(iso).toLocaleTimeString() : "");
const short = (id) => (id ? String(id).slice(0, 8) : "");

function show(error) {
  $("error").textContent = error ? (error instanceof SwitchboardError ? `${error.message} (${error.code})` : String(error)) : "";
}

// Charts

function svgElement(name, attributes, text) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

const FRAME = { left: 36, right: 590, top: 10, bottom: 140 };

function axes(svg, maxY, label) {
  svg.replaceChildren(
    svgElement("line", { class: "axis", x1: FRAME.left, y1: FRAME.bottom, x2: FRAME.right, y2: FRAME.bottom }),
    svgElement("line", { class: "axis", x1: FRAME.left, y1: FRAME.top, x2: FRAME.left, y2: FRAME.bottom }),
    svgElement("text", { x: 2, y: FRAME.top + 8 }, formatNumber(maxY)),
    svgElement("text", { x: 2, y: FRAME.bottom }, "0"),
    svgElement("text", { x: FRAME.right - 120, y: FRAME.bottom + 14 }, label),
  );
}

function formatNumber(value) {
  return value >= 10 ? String(Math.round(value)) : value.toFixed(1);
}

/** A bar a minute. */
function drawBars(svg, counts) {
  const maxY = Math.max(1, ...counts);
  axes(svg, maxY, `last ${counts.length} min`);
  const width = (FRAME.right - FRAME.left) / counts.length;
  counts.forEach((count, index) => {
    if (count === 0) return;
    const height = ((FRAME.bottom - FRAME.top) * count) / maxY;
    svg.append(
      svgElement("rect", {
        class: "bar",
        x: FRAME.left + index * width + 0.5,
        y: FRAME.bottom - height,
        width: Math.max(1, width - 1),
        height,
      }),
    );
  });
}

/** A dot a sample, by time across the window; colour by series. */
function drawDots(svg, samples, from, to, colorOf) {
  const maxY = Math.max(1, ...samples.map((sample) => sample.seconds));
  axes(svg, maxY, `${samples.length} samples`);
  const span = Math.max(1, to - from);
  for (const sample of samples) {
    const at = Date.parse(sample.at);
    svg.append(
      svgElement("circle", {
        cx: FRAME.left + ((FRAME.right - FRAME.left) * (at - from)) / span,
        cy: FRAME.bottom - ((FRAME.bottom - FRAME.top) * sample.seconds) / maxY,
        r: 2.5,
        fill: colorOf(sample),
      }),
    );
  }
}

// Reading

async function refresh() {
  try {
    const [overview, push, apps, hooks] = await Promise.all([
      admin.request("GET", "/admin/console?minutes=60"),
      admin.request("GET", "/admin/push/status"),
      admin.request("GET", "/admin/gateway/apps"),
      admin.request("GET", "/admin/webhooks"),
    ]);
    show(null);
    renderOverview(overview);
    renderPush(push);
    fill(
      "gateway-apps",
      apps.apps.map((app) => [cell(app.id), cell(app.name), cell(app.keys.length, "number"), cell(time(app.createdAt))]),
      "No gateway apps.",
    );
    await renderWebhooks(hooks.endpoints);
    $("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (error) {
    if (error instanceof SwitchboardError && error.status === 401) {
      stop();
      show(new Error("The admin key was refused."));
      return;
    }
    show(error);
  }
}

function renderOverview(overview) {
  const to = Date.parse(overview.generatedAt), from = to - overview.minutes * 60000;
  drawBars($("chart-calls"), overview.callsPerMinute);
  drawDots($("chart-answer"), overview.ringToAnswer, from, to, () => COLORS[0]);
  const channels = [...new Set(overview.pushLatency.map((sample) => sample.channel))].sort();
  const colorOf = (sample) => COLORS[channels.indexOf(sample.channel) % COLORS.length];
  drawDots($("chart-push"), overview.pushLatency, from, to, colorOf);
  $("push-legend").replaceChildren(
    ...channels.map((channel, index) => {
      const span = document.createElement("span");
      span.textContent = channel;
      span.style.setProperty("--color", COLORS[index % COLORS.length]);
      return span;
    }),
  );
  fill(
    "live-calls",
    overview.liveCalls.map((call) => [
      cell(short(call.id)),
      cell(`${call.scopeKind} ${short(call.scopeId)}`),
      cell(call.state),
      cell(time(call.createdAt)),
      cell(time(call.answeredAt)),
      cell(call.participants.filter((p) => !p.leftAt).length, "number"),
    ]),
    "No live calls.",
  );
}

function renderPush(push) {
  $("push-queue").textContent =
    `${push.pending} pending` +
    (push.oldestPendingAgeSeconds === null ? "" : `, the oldest for ${push.oldestPendingAgeSeconds.toFixed(1)} s`);
  /** @type {Map<string, Record<string, number>>} */
  const byChannel = new Map();
  for (const outcome of push.outcomes) {
    const counts = byChannel.get(outcome.channel) || {};
    counts[outcome.state] = (counts[outcome.state] || 0) + outcome.count;
    byChannel.set(outcome.channel, counts);
  }
  fill(
    "push-channels",
    [...byChannel.entries()].sort().map(([channel, counts]) => [
      cell(channel),
      cell(counts.delivered || 0, "number"),
      cell(counts.dropped || 0, "number"),
      cell(counts.expired || 0, "number"),
      cell(counts.failed || 0, counts.failed ? "number failed" : "number"),
    ]),
    "No pushes yet.",
  );
  fill(
    "push-failures",
    push.newestFailures.map((failure) => [
      cell(time(failure.finishedAt)),
      cell(failure.channel),
      cell(failure.state, "failed"),
      cell(failure.reason || failure.lastError),
      cell(`…${failure.tokenSuffix}`),
      cell(short(failure.userId)),
    ]),
    "No failures.",
  );
}

async function renderWebhooks(endpoints) {
  const box = $("webhooks");
  const sections = [];
  for (const endpoint of endpoints) {
    const section = document.createElement("div");
    const title = document.createElement("h3");
    title.textContent = `${endpoint.url} ${endpoint.enabled ? "" : "(disabled)"}`;
    const events = document.createElement("p");
    events.textContent = endpoint.events.length ? endpoint.events.join(", ") : "every event";
    const table = document.createElement("table");
    const head = document.createElement("tr");
    for (const name of ["When", "Event", "State", "Attempts", "Last status", "Error"]) {
      const th = document.createElement("th");
      th.textContent = name;
      head.append(th);
    }
    table.append(head);
    const { deliveries } = await admin.request(
      "GET",
      `/admin/webhooks/${encodeURIComponent(endpoint.id)}/deliveries?limit=10`,
    );
    for (const delivery of deliveries) {
      const tr = document.createElement("tr");
      tr.append(
        cell(time(delivery.createdAt)),
        cell(delivery.eventType),
        cell(delivery.state, delivery.state === "dead" ? "failed" : undefined),
        cell(delivery.attempts, "number"),
        cell(delivery.lastStatus),
        cell(delivery.lastError),
      );
      table.append(tr);
    }
    section.append(title, events, table);
    sections.push(section);
  }
  if (sections.length === 0) {
    const none = document.createElement("p");
    none.textContent = "No webhook endpoints.";
    sections.push(none);
  }
  box.replaceChildren(...sections);
}

$("devices-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  try {
    const userId = /** @type {any} */ (event.target).elements.userId.value.trim();
    const { tokens } = await admin.request("GET", `/admin/push/devices?userId=${encodeURIComponent(userId)}`);
    fill(
      "devices",
      tokens.map((token) => [
        cell(short(token.deviceId)),
        cell(token.channel),
        cell(`${token.platform}${token.brand ? ` (${token.brand})` : ""}`),
        cell(`…${token.tokenSuffix}`),
        cell(time(token.registeredAt)),
        cell(token.bound ? "yes" : "no"),
        cell(time(token.lastSuccessAt)),
        cell(token.lastFailureAt ? `${time(token.lastFailureAt)} ${token.lastFailureReason || ""}` : "", "failed"),
      ]),
      "No devices.",
    );
  } catch (error) {
    show(error);
  }
});

// The key

function start(key) {
  admin.token = key;
  sessionStorage.setItem("switchboard.adminKey", key);
  $("login").hidden = true;
  $("console").hidden = false;
  $("forget").hidden = false;
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, 5000);
}

function stop() {
  clearInterval(timer);
  admin.token = null;
  sessionStorage.removeItem("switchboard.adminKey");
  $("login").hidden = false;
  $("console").hidden = true;
  $("forget").hidden = true;
}

$("key-form").addEventListener("submit", (event) => {
  event.preventDefault();
  start(/** @type {any} */ (event.target).elements.key.value);
});
$("forget").addEventListener("click", stop);

const saved = sessionStorage.getItem("switchboard.adminKey");
if (saved) start(saved);
