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

async function main() {
  const css = getComputedStyle(document.documentElement).getPropertyValue("--squeeze-stylesheet").trim();
  document.body.dataset.stylesheet = css || "missing";
  await Promise.all([loadProducts(), readEvents(), uploadSelfTest(), checkAssets()]);
  await showCodings();
  document.body.dataset.done = "true";
}

main();
