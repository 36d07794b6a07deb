// lumen studio: the page's logic. Talks to the server's /api routes (lumen/studio/server.py).
//
// Renders are debounced (a slider must rest DEBOUNCE_MS) and at most one is in flight: input
// arriving during a render marks the state dirty, and one more render runs when it returns, with
// the latest values. For tests: <body data-state> is "waiting" (a render is scheduled), "busy"
// or "idle"; the "after" picture carries data-renders (a count), data-digest (the server's hash
// of the shown pixels) and data-device.
"use strict";

const DEBOUNCE_MS = 150;
const $ = (id) => document.getElementById(id);

const ui = {
  busy: false,      // a render request is in flight
  dirty: false,     // the controls changed since that request was sent
  timer: null,      // the debounce timer, while it runs
  loading: 0,       // image loads in flight
  renders: 0,       // renders shown
  afterUrl: null,   // the object URL of the shown result
};

function showError(message) {
  const box = $("error");
  box.textContent = message;
  box.hidden = !message;
}

async function errorOf(response) {
  try {
    const body = await response.json();
    if (body && body.error) return body.error;
  } catch (e) { /* not JSON */ }
  return `${response.status} ${response.statusText}`;
}

async function api(path, options) {
  const r = await fetch(path, options);
  if (!r.ok) throw new Error(await errorOf(r));
  return r.json();
}

function params() {
  return {
    stock: $("stock").value,
    halation: Number($("halation").value),
    bloom: Number($("bloom").value),
    grain: Number($("grain").value),
    seed: Number($("seed").value || 0),
    device: $("device").value,
  };
}

function updateState() {
  const busy = ui.busy || ui.loading > 0;
  document.body.dataset.state = busy ? "busy" : ui.timer !== null || ui.dirty ? "waiting" : "idle";
  $("busy").hidden = !busy;
}

function schedule(delay = DEBOUNCE_MS) {
  clearTimeout(ui.timer);
  ui.timer = setTimeout(() => {
    ui.timer = null;
    render();
  }, delay);
  updateState();
}

function setBusy(busy) {
  ui.busy = busy;
  updateState();
}

function fmt(x, digits) {
  return Number(x).toFixed(digits);
}

function showFacts(f) {
  $("timing").textContent =
    `last render: ${fmt(f.ms, 1)} ms, ${fmt(f.ms_per_mp, 1)} ms/MP ` +
    `(${f.width}\u00d7${f.height}, ${fmt(f.megapixels, 2)} MP)`;
  const how = f.algo || f.method;
  $("ran-on").textContent =
    `ran on ${f.device}${how ? " (" + how + ")" : ""}` +
    (f.threads ? `, ${f.threads} threads` : "") +
    `; with PNG ${fmt(f.total_ms, 0)} ms`;
}

async function render() {
  if (ui.busy) {
    ui.dirty = true;
    updateState();
    return;
  }
  ui.dirty = false;
  setBusy(true);
  try {
    const r = await fetch("/api/render", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(params()),
    });
    if (!r.ok) throw new Error(await errorOf(r));
    const facts = JSON.parse(r.headers.get("X-Lumen-Render") || "{}");
    const blob = await r.blob();
    const url = URL.createObjectURL(blob);
    const after = $("after");
    await new Promise((resolve) => {
      after.onload = after.onerror = resolve;
      after.src = url;
    });
    if (ui.afterUrl) URL.revokeObjectURL(ui.afterUrl);
    ui.afterUrl = url;
    ui.renders += 1;
    after.dataset.digest = facts.digest || "";
    after.dataset.device = facts.device || "";
    after.dataset.renders = String(ui.renders);
    showFacts(facts);
    showError("");
  } catch (e) {
    showError(e.message || String(e));
    $("after").dataset.errors = String(Number($("after").dataset.errors || 0) + 1);
  } finally {
    setBusy(false);
    if (ui.dirty) schedule(0);
  }
}

function showImage(info) {
  $("image-info").textContent =
    `${info.name}: ${info.width}\u00d7${info.height}, ` +
    `${info.channels === 1 ? "gray" : "RGB"} (${info.note})` +
    (info.display_width !== info.width
      ? `; shown at ${info.display_width}\u00d7${info.display_height}` : "");
  $("before").src = `/api/source.png?id=${info.id}`;
  $("before").dataset.image = String(info.id);
}

async function loadWith(promise) {
  ui.loading += 1;
  updateState();
  try {
    const body = await promise;
    showImage(body.image);
    showError("");
    schedule(0);
  } catch (e) {
    showError(e.message || String(e));
  } finally {
    ui.loading -= 1;
    updateState();
  }
}

function option(select, value, label) {
  const o = document.createElement("option");
  o.value = value;
  o.textContent = label;
  select.appendChild(o);
}

async function init() {
  let state;
  try {
    state = await api("/api/state");
  } catch (e) {
    showError(`cannot reach the studio server: ${e.message || e}`);
    return;
  }
  $("version").textContent = `lumen ${state.version}`;
  for (const s of state.stocks) {
    option($("stock"), s.name, `${s.title} (${s.color ? "colour" : "b&w"}, ISO ${s.iso})`);
  }
  for (const d of state.devices) option($("device"), d.spec, d.label);
  $("device").title = "lumen.devices(): " + state.devices.map((d) => d.label).join("; ");
  $("device").value = state.device;
  showImage(state.image);

  for (const name of ["halation", "bloom", "grain"]) {
    const slider = $(name);
    const shown = $(`${name}-value`);
    slider.addEventListener("input", () => {
      shown.textContent = fmt(slider.value, 2);
      schedule();
    });
    slider.addEventListener("change", () => schedule());
  }
  $("seed").addEventListener("input", () => schedule());
  $("reseed").addEventListener("click", () => {
    $("seed").value = String(Math.floor(Math.random() * 1e9));
    schedule(0);
  });
  $("stock").addEventListener("change", () => schedule(0));
  $("device").addEventListener("change", () => schedule(0));

  $("file").addEventListener("change", () => {
    const file = $("file").files[0];
    if (!file) return;
    loadWith(api(`/api/upload?name=${encodeURIComponent(file.name)}`,
                 { method: "POST", body: file }));
    $("file").value = "";
  });
  $("open-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    loadWith(api("/api/open", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ path: $("path").value }),
    }));
  });
  $("scene").addEventListener("click",
                             () => loadWith(api("/api/scene", { method: "POST", body: "" })));
  $("download").addEventListener("click", (ev) => {
    if (!ui.renders) ev.preventDefault();
  });
  schedule(0);
}

init();
