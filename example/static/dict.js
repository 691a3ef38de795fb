// Script of the dictionary demo page (dict.html). It writes what it received
// into the DOM, where people can read it and the end-to-end test
// (example/e2e_test.go) can check it.
"use strict";

const v1 = "/static/lib/underscore-1.13.6.min.js";
const v2 = "/static/lib/underscore-1.13.7.min.js";

async function sha256Hex(buffer) {
  const digest = await crypto.subtle.digest("SHA-256", buffer);
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// served returns the server's record of the latest response on path to
// this browser (see /debug/codings).
async function served(path) {
  const res = await fetch("/debug/codings", { cache: "no-store" });
  const page = await res.json();
  return (page.paths || {})[path] || {};
}

// untilDelta fetches path until it comes as dcz or dcb: the browser stores
// a dictionary asynchronously, after the response that carried it ended.
// before runs ahead of every try but the first.
async function untilDelta(path, tries, before) {
  let body, record, res;
  for (let i = 1; i <= tries; i++) {
    if (i > 1) {
      await sleep(100);
      if (before) await before(i);
    }
    res = await fetch(path, { cache: "no-store" });
    body = await res.arrayBuffer();
    record = await served(path);
    if (record.content_encoding === "dcz" || record.content_encoding === "dcb") {
      return { res, body, record, tries: i };
    }
  }
  return { res, body, record, tries };
}

async function report(el, got) {
  el.dataset.status = got.res.status;
  el.dataset.encoding = got.record.content_encoding || "";
  el.dataset.wire = got.record.bytes;
  el.dataset.bytes = got.body.byteLength;
  el.dataset.sha256 = await sha256Hex(got.body);
  el.dataset.tries = got.tries;
  el.textContent = `HTTP ${got.res.status} as ${el.dataset.encoding || "identity"} after ${got.tries} ` +
    `request(s): ${el.dataset.wire} bytes on the wire, ${el.dataset.bytes} decoded, sha256 ${el.dataset.sha256}`;
  el.dataset.state = "done";
}

async function scripts() {
  const el = document.getElementById("dict-result");
  try {
    await (await fetch(v1)).arrayBuffer(); // a whole response: the browser keeps it
    const got = await untilDelta(v2, 20);
    await report(el, got);
    const sizes = await (await fetch("/debug/wire", { cache: "no-store" })).json();
    sizes["received by this browser as " + el.dataset.encoding] = Number(el.dataset.wire);
    const rows = document.querySelector("#wire tbody");
    for (const [coding, n] of Object.entries(sizes)) {
      const tr = rows.insertRow();
      tr.insertCell().textContent = coding;
      const cell = tr.insertCell();
      cell.className = "num";
      cell.textContent = n;
    }
  } catch (err) {
    el.dataset.state = "error";
    el.textContent = String(err);
  }
}

async function api() {
  const el = document.getElementById("orders-result");
  try {
    // The Link header asks the browser to fetch the dictionary when idle;
    // if it has not after a few tries, the page fetches it as a script
    // would, which stores it just the same.
    const got = await untilDelta("/api/orders", 20, async (i) => {
      if (i === 6) {
        el.dataset.fetched = "true";
        await (await fetch("/dict/orders.dict")).arrayBuffer();
      }
    });
    await report(el, got);
  } catch (err) {
    el.dataset.state = "error";
    el.textContent = String(err);
  }
}

(async () => {
  await Promise.all([scripts(), api()]);
  document.body.dataset.done = "true";
})();
