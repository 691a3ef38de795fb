// Script of the squeeze demo page. It exercises each capability from the
// browser and writes what it received into the DOM, where people can read it
// and the end-to-end test (example/e2e_test.go) can check it.
"use strict";

const params = new URLSearchParams(location.search);
const wantEvents = Math.max(1, Number(params.get("events")) || 5);

// uploadSample is the text posted to /upload. e2e_test.go builds the same
// bytes to check the size and hash the server reports.
function uploadSample() {
  const lines = [];
  for (let i = 0; i < 2000; i++) {
    lines.push(`line ${i}: squeeze decodes compressed request bodies before the handler reads them\n`);
  }
  return lines.join("");
}

async function sha256Hex(buffer) {
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

function setStatus(id, text, ok) {
  const el = document.getElementById(id);
  el.textContent = text;
  el.className = "status " + (ok ? "ok" : "error");
}

function formatPrice(cents) {
  return (cents / 100).toLocaleString("en-US", { style: "currency", currency: "EUR" });
}

async function loadProducts() {
  const out = document.getElementById("api-result");
  try {
    const res = await fetch("/api/products");
    const body = await res.arrayBuffer();
    const products = JSON.parse(new TextDecoder().decode(body));
    const rows = document.querySelector("#products tbody");
    for (const p of products) {
      const tr = rows.insertRow();
      tr.insertCell().textContent = p.sku;
      tr.insertCell().textContent = p.name;
      tr.insertCell().textContent = p.category;
      const price = tr.insertCell();
      price.className = "num";
      price.textContent = formatPrice(p.price_cents);
      const stock = tr.insertCell();
      stock.className = "num";
      stock.textContent = p.in_stock;
    }
    out.dataset.status = res.status;
    out.dataset.bytes = body.byteLength;
    out.dataset.sha256 = await sha256Hex(body);
    out.textContent = `HTTP ${res.status}, ${body.byteLength} bytes decoded, sha256 ${out.dataset.sha256}`;
    out.dataset.state = "done";
    setStatus("api-status", `${products.length} products loaded.`, true);
  } catch (err) {
    out.dataset.state = "error";
    setStatus("api-status", `Loading failed: ${err}`, false);
  }
}

function readEvents() {
  const list = document.getElementById("events");
  return new Promise((resolve) => {
    const source = new EventSource(`/events?count=${wantEvents}`);
    const timer = setTimeout(() => finish("error", "timed out"), 15000);
    function finish(state, text) {
      clearTimeout(timer);
      source.close();
      list.dataset.state = state;
      setStatus("stream-status", text, state === "done");
      resolve();
    }
    source.onmessage = (e) => {
      const li = document.createElement("li");
      li.textContent = e.data;
      list.append(li);
      if (list.children.length >= wantEvents) {
        finish("done", `${wantEvents} events received, then the stream was closed.`);
      }
    };
    source.onerror = () => {
      if (list.children.length < wantEvents) {
        finish("error", `The stream failed after ${list.children.length} events.`);
      }
    };
  });
}

async function upload(data, out) {
  const compressed = await new Response(
    new Blob([data]).stream().pipeThrough(new CompressionStream("gzip")),
  ).arrayBuffer();
  const res = await fetch("/upload", {
    method: "POST",
    headers: { "Content-Type": "application/octet-stream", "Content-Encoding": "gzip" },
    body: compressed,
  });
  const text = await res.text();
  out.dataset.status = res.status;
  out.dataset.sentBytes = compressed.byteLength;
  if (res.ok) {
    const answer = JSON.parse(text);
    out.dataset.bytes = answer.bytes;
    out.dataset.sha256 = answer.sha256;
  }
  out.textContent = `sent ${compressed.byteLength} gzip bytes; HTTP ${res.status}: ${text.trim()}`;
  return res.ok;
}

async function uploadSelfTest() {
  const out = document.getElementById("upload-result");
  try {
    const data = new TextEncoder().encode(uploadSample());
    out.dataset.localSha256 = await sha256Hex(data);
    const ok = await upload(data, out);
    const match = ok && out.dataset.sha256 === out.dataset.localSha256;
    out.dataset.state = match ? "done" : "error";
    setStatus("upload-status", match
      ? `The server decoded ${out.dataset.bytes} bytes with the same SHA-256 as the browser.`
      : "The server's answer does not match what was sent.", match);
  } catch (err) {
    out.dataset.state = "error";
    setStatus("upload-status", `Upload failed: ${err}`, false);
  }
}

async function checkAssets() {
  const list = document.getElementById("assets");
  try {
    for (const path of ["/", "/small", "/static/app.js", "/static/app.css"]) {
      const res = await fetch(path, { cache: "no-store" });
      const body = await res.arrayBuffer();
      const li = document.createElement("li");
      li.dataset.path = path;
      li.dataset.status = res.status;
      li.dataset.bytes = body.byteLength;
      li.dataset.sha256 = await sha256Hex(body);
      li.textContent = `${path}: HTTP ${res.status}, ${body.byteLength} bytes, sha256 ${li.dataset.sha256}`;
      list.append(li);
    }
    list.dataset.state = "done";
  } catch (err) {
    list.dataset.state = "error";
    list.append(`Fetching failed: ${err}`);
  }
}

async function showCodings() {
  const out = document.getElementById("codings-result");
  try {
    const res = await fetch("/debug/codings");
    out.textContent = JSON.stringify(await res.json(), null, 2);
    out.dataset.state = "done";
  } catch (err) {
    out.textContent = `Could not read /debug/codings: ${err}`;
    out.dataset.state = "error";
  }
}

document.getElementById("upload-file").addEventListener("change", async (e) => {
  const file = e.target.files[0];
  if (file) {
    await upload(new Uint8Array(await file.arrayBuffer()), document.getElementById("upload-result"));
  }
});

// ---- Bytes on the wire: what the browser measured, what the server counted.

const SVG_NS = "http://www.w3.org/2000/svg";
// timings keeps the latest Resource Timing with a body for each path: the
// browser's buffer is cleared after every read, so the polling below never
// fills it.
const timings = new Map();

function svgEl(parent, name, attrs, text) {
  const e = document.createElementNS(SVG_NS, name);
  for (const [k, v] of Object.entries(attrs)) {
    e.setAttribute(k, v);
  }
  if (text !== undefined) {
    e.textContent = text;
  }
  parent.append(e);
  return e;
}

function plural(n, word) {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function formatBytes(n) {
  if (n < 1024) {
    return `${n} B`;
  }
  if (n < 1024 * 1024) {
    return `${(n / 1024).toFixed(1)} KB`;
  }
  return `${(n / 1048576).toFixed(1)} MB`;
}

function collectTimings() {
  const entries = [...performance.getEntriesByType("navigation"), ...performance.getEntriesByType("resource")];
  for (const e of entries) {
    const url = new URL(e.name, location.href);
    if (url.origin !== location.origin || url.pathname.startsWith("/debug/") || url.pathname === "/metrics") {
      continue; // the chart's own polling
    }
    if (e.decodedBodySize === 0) {
      continue; // no body, or served from the cache
    }
    timings.set(url.pathname, { plain: e.decodedBodySize, wire: e.encodedBodySize });
  }
  performance.clearResourceTimings();
}

// drawBars draws one row per item: a light bar for the plain bytes and, over
// it, a bar in the coding's colour for the bytes on the wire, all on one scale.
function drawBars(svg, rows) {
  svg.replaceChildren();
  const width = 860, rowH = 30, labelW = 140, barX = 222, barW = 370, textX = barX + barW + 12;
  const max = Math.max(1, ...rows.map((r) => Math.max(r.plain, r.wire)));
  rows.forEach((r, i) => {
    const y = i * rowH;
    const coding = r.coding || "none";
    const g = svgEl(svg, "g", {
      class: "row", "data-key": r.key, "data-coding": r.coding, "data-plain": r.plain, "data-wire": r.wire,
    });
    svgEl(g, "text", { x: 0, y: y + 19, class: "label" }, r.label);
    svgEl(g, "rect", { x: labelW, y: y + 6, width: 66, height: 18, rx: 9, class: `badge ${coding}` });
    svgEl(g, "text", { x: labelW + 33, y: y + 19.5, "text-anchor": "middle", fill: "#fff", style: "fill:#fff;font-size:11.5px" }, r.coding || "plain");
    svgEl(g, "rect", { x: barX, y: y + 5, width: (barW * r.plain) / max, height: 20, rx: 2, class: "plain-bar" });
    svgEl(g, "rect", { x: barX, y: y + 5, width: Math.max(1.5, (barW * r.wire) / max), height: 20, rx: 2, class: `wire-bar ${coding}` });
    const t = svgEl(g, "text", { x: textX, y: y + 19 });
    svgEl(t, "tspan", {}, `${formatBytes(r.wire)}`);
    svgEl(t, "tspan", { class: "note" }, ` of ${formatBytes(r.plain)}`);
    if (r.wire < r.plain) {
      svgEl(t, "tspan", { class: "saving" }, `  −${Math.round(100 * (1 - r.wire / r.plain))}%`);
    }
    if (r.note) {
      svgEl(t, "tspan", { class: "note" }, `  ${r.note}`);
    }
  });
  svg.setAttribute("viewBox", `0 0 ${width} ${Math.max(1, rows.length) * rowH}`);
}

async function getJSON(path) {
  const res = await fetch(path, { cache: "no-store" });
  return res.json();
}

async function refreshWire() {
  collectTimings();
  const [codings, counters] = await Promise.all([getJSON("/debug/codings"), getJSON("/debug/counters")]);
  const records = codings.paths || {};

  // What this page loaded, one row per resource.
  const resources = [...timings.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([path, t]) => ({
    key: path, label: path, coding: (records[path] || {}).content_encoding || "", plain: t.plain, wire: t.wire,
  }));
  const resourceChart = document.getElementById("resource-chart");
  drawBars(resourceChart, resources);
  resourceChart.dataset.state = "done";

  // The same, summed per coding.
  const byCoding = new Map();
  for (const r of resources) {
    const sum = byCoding.get(r.coding) || { key: r.coding || "plain", coding: r.coding, plain: 0, wire: 0, n: 0 };
    sum.plain += r.plain;
    sum.wire += r.wire;
    sum.n++;
    byCoding.set(r.coding, sum);
  }
  const codingChart = document.getElementById("coding-chart");
  drawBars(codingChart, [...byCoding.values()].map((s) => ({ ...s, label: plural(s.n, "resource") })));
  codingChart.dataset.state = "done";
  const page = { plain: 0, wire: 0 };
  for (const r of resources) {
    page.plain += r.plain;
    page.wire += r.wire;
  }
  const pageSummary = document.getElementById("page-summary");
  pageSummary.replaceChildren();
  const pageSaved = document.createElement("strong");
  pageSaved.textContent = `${formatBytes(page.plain - page.wire)} saved`;
  pageSummary.append(pageSaved, `: ${plural(resources.length, "resource")}, ${formatBytes(page.plain)} decoded ` +
    `from ${formatBytes(page.wire)} on the wire.`);

  // The server's counters: compressed per coding, plain per reason, uploads.
  const c = counters.compressor, d = counters.decompressor;
  const rows = [];
  for (const [coding, s] of Object.entries(c.codings).sort()) {
    rows.push({ key: `compressed:${coding}`, label: `${s.compressed} compressed`, coding, plain: s.total_uncompressed_bytes, wire: s.total_compressed_bytes });
  }
  for (const [reason, s] of Object.entries(c.reasons).sort()) {
    if (s.not_compressed > 0) {
      rows.push({ key: `plain:${reason}`, label: `${s.not_compressed} ${reason.replaceAll("_", " ")}`, coding: "", plain: s.not_compressed_bytes, wire: s.not_compressed_bytes });
    }
  }
  for (const [coding, s] of Object.entries(d.codings).sort()) {
    rows.push({ key: `decoded:${coding}`, label: plural(s.decompressed, "upload"), coding, plain: s.total_uncompressed_bytes, wire: s.total_compressed_bytes });
  }
  const serverChart = document.getElementById("server-chart");
  drawBars(serverChart, rows);
  serverChart.dataset.state = "done";

  const summary = document.getElementById("server-summary");
  const saved = c.total_uncompressed_bytes - c.total_compressed_bytes;
  summary.dataset.compressed = c.compressed;
  summary.dataset.notCompressed = c.not_compressed;
  summary.dataset.uncompressedBytes = c.total_uncompressed_bytes;
  summary.dataset.compressedBytes = c.total_compressed_bytes;
  summary.replaceChildren();
  const strong = document.createElement("strong");
  strong.textContent = `${formatBytes(saved)} saved`;
  summary.append(strong, `: ${c.compressed} responses compressed from ${formatBytes(c.total_uncompressed_bytes)} to ` +
    `${formatBytes(c.total_compressed_bytes)} in ${(1000 * c.encode_seconds).toFixed(1)} ms; ` +
    `${c.not_compressed} sent plain; ${plural(d.decompressed, "upload")} decoded.`);
  summary.dataset.state = "done";
  summary.dataset.refreshes = Number(summary.dataset.refreshes || 0) + 1;
}

function startWire() {
  const tick = async () => {
    try {
      await refreshWire();
    } catch (err) {
      const summary = document.getElementById("server-summary");
      summary.dataset.state = "error";
      summary.textContent = `Could not read the counters: ${err}`;
    }
    setTimeout(tick, 1000);
  };
  tick();
}

async function main() {
  const css = getComputedStyle(document.documentElement).getPropertyValue("--squeeze-stylesheet").trim();
  document.body.dataset.stylesheet = css || "missing";
  startWire();
  await Promise.all([loadProducts(), readEvents(), uploadSelfTest(), checkAssets()]);
  await showCodings();
  document.body.dataset.done = "true";
}

main();
