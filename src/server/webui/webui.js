// The web page of `dllm serve` (index.html). It reads the model and the request defaults from
// GET /props, sends the chat to POST /v1/chat/completions with "stream": true and
// "dllm": {"canvas": true}, and draws each canvas event as one cell per position of the answer's
// canvas (the event's fields: docs/serving.md "Streaming"). It talks to no other host.
"use strict";

const KEY_STORAGE = "dllm.apiKey"; // sessionStorage: this tab's session only
const MOTION_STORAGE = "dllm.reducedMotion"; // localStorage: a display preference
// The live view shows each step for at least MIN_STEP_MS (a small model's steps take a few ms, far
// less than a screen refresh, and would go by unseen), and skips ahead when that puts it more than
// MAX_LAG_MS behind the stream. A hidden tab or reduced motion draws at once.
const MIN_STEP_MS = 25;
const MAX_LAG_MS = 2000;

const $ = (id) => document.getElementById(id);

/** A new element: el("div", "a b", {"data-testid": "x"}, "text"). */
function el(tag, className, attrs, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

const page = {
  props: null, // GET /props, once it answered
  history: [], // finished turns sent with the next request: {role, content}
  turn: null, // the answer being generated
  stepsEdited: false, // the user typed a number of steps (else it follows max tokens, as the server's)
  watching: false, // polling /health after the connection was lost
  retry: null,
};

// ---------------------------------------------------------------------------------------------
// The server: API key, status, /props

function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || "";
}

function authHeaders(extra) {
  const h = Object.assign({}, extra);
  const key = apiKey();
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

function setStatus(state, text) {
  const s = $("status");
  s.dataset.state = state;
  s.textContent = text;
}

function showKeyForm(message) {
  $("key-form").hidden = false;
  $("key-error").hidden = !message;
  $("key-error").textContent = message || "";
  $("forget-key").hidden = true;
  $("api-key").focus();
}

/** The error message of an OpenAI error body, or the status line. */
async function errorText(res) {
  try {
    const j = await res.json();
    if (j && j.error && j.error.message) return j.error.message;
  } catch (e) {
    // not JSON: the status says enough
  }
  return "HTTP " + res.status + (res.statusText ? " " + res.statusText : "");
}

async function loadProps() {
  clearTimeout(page.retry);
  let res;
  try {
    res = await fetch("/props", { headers: authHeaders(), cache: "no-store" });
  } catch (e) {
    setStatus("offline", "server unreachable");
    page.retry = setTimeout(loadProps, 2000);
    return;
  }
  if (res.status === 401) {
    const had = apiKey();
    sessionStorage.removeItem(KEY_STORAGE);
    setStatus("key", "API key needed");
    showKeyForm(had ? "The server did not accept that key (401). Check it and try again." : "");
    return;
  }
  if (res.status === 503) {
    setStatus("busy", "loading the model…");
    page.retry = setTimeout(loadProps, 1000);
    return;
  }
  if (!res.ok) {
    setStatus("offline", await errorText(res));
    page.retry = setTimeout(loadProps, 3000);
    return;
  }
  applyProps(await res.json());
  $("key-form").hidden = true;
  $("forget-key").hidden = !apiKey();
  setStatus("ready", "ready");
}

function applyProps(props) {
  page.props = props;
  $("model-name").textContent = props.model;
  $("model-name").title = props.model;
  $("model-arch").textContent = props.arch;
  $("model-arch").hidden = false;
  $("fact-model").textContent = props.model;
  $("fact-arch").textContent = props.arch + " (" + props.schedule + " sampler)";
  $("fact-slots").textContent = props.total_slots + " parallel";
  $("fact-ctx").textContent = props.n_ctx + " tokens";
  document.title = props.model + " · dllm";
  resetSettings();
}

/** After a lost connection: /health every 2 s until the server answers, then /props again. */
function watchServer() {
  if (page.watching) return;
  page.watching = true;
  const tick = async () => {
    try {
      const r = await fetch("/health", { cache: "no-store" });
      if (r.ok) {
        page.watching = false;
        loadProps();
        return;
      }
      setStatus("busy", r.status === 503 ? "server starting…" : "server error " + r.status);
    } catch (e) {
      setStatus("offline", "server unreachable");
    }
    setTimeout(tick, 2000);
  };
  setStatus("offline", "server unreachable");
  setTimeout(tick, 2000);
}

// ---------------------------------------------------------------------------------------------
// Settings

function fields() {
  return $("settings-form").elements;
}

/** Which settings each sampler family (GET /props "schedule") takes, and its cache modes. */
const FAMILIES = {
  llada: { unused: ["top_p"], caches: ["none", "prefix", "dual"] },
  dream: { unused: [], caches: ["none", "prefix", "dual"] },
  block_diffusion: { unused: [], caches: ["exact", "none"] },
  entropy_bound: { unused: ["block_length", "threshold", "cache", "temperature", "top_p"], caches: [] },
};

function resetSettings() {
  const f = fields();
  const p = page.props;
  if (!p) return;
  const d = p.default_generation_settings;
  const family = FAMILIES[p.schedule] || FAMILIES.dream;
  f.max_tokens.value = d.max_tokens;
  f.steps.value = d.steps;
  f.block_length.value = d.block_length > 0 ? d.block_length : "";
  f.block_length.placeholder = d.block_length > 0 ? "" : "one block";
  f.threshold.value = d.threshold == null ? "" : d.threshold;
  for (const o of f.cache.options) o.disabled = !family.caches.includes(o.value);
  f.cache.value = d.cache || "none";
  f.temperature.value = d.temperature == null ? "" : d.temperature;
  f.top_p.value = d.top_p == null ? "" : d.top_p;
  f.seed.value = d.seed;
  // A setting the model's sampler does not take is shown disabled and never sent.
  for (const name of ["block_length", "threshold", "cache", "temperature", "top_p"])
    f[name].disabled = family.unused.includes(name);
  $("top-p-note").textContent = f.top_p.disabled ? "not for this model" : "1 = off";
  page.stepsEdited = false;
}

/** The request's settings: what the panel shows, leaving out what equals the server's default where
 * sending it could change nothing but a warning (block length, cache, top-p). */
function settingsBody() {
  const f = fields();
  const d = page.props ? page.props.default_generation_settings : {};
  const num = (name) => {
    const v = f[name].value.trim();
    if (v === "" || f[name].disabled) return null;
    const n = Number(v);
    return Number.isFinite(n) ? n : null;
  };
  const body = {};
  const threshold = num("threshold");
  for (const name of ["max_tokens", "temperature", "seed"]) {
    const v = num(name);
    if (v !== null) body[name] = v;
  }
  if (threshold !== null) body.threshold = threshold;
  // With a threshold LLaDA and Dream run until the block is full (no steps); block diffusion's steps
  // per block are its threshold's fallback schedule.
  const blockDiffusion = page.props && page.props.schedule === "block_diffusion";
  if ((threshold === null || blockDiffusion) && num("steps") !== null) body.steps = num("steps");
  for (const name of ["block_length", "top_p"]) {
    const v = num(name);
    if (v !== null && v !== d[name]) body[name] = v;
  }
  if (!f.cache.disabled && f.cache.value !== (d.cache || "none")) body.cache = f.cache.value;
  return body;
}

function reducedMotion() {
  return document.body.classList.contains("reduced-motion");
}

function setReducedMotion(on, remember) {
  document.body.classList.toggle("reduced-motion", on);
  $("reduced-motion").checked = on;
  if (remember) localStorage.setItem(MOTION_STORAGE, on ? "1" : "0");
}

function toggleSettings(open) {
  $("settings").hidden = !open;
  $("settings-toggle").setAttribute("aria-expanded", String(open));
}

// ---------------------------------------------------------------------------------------------
// The canvas view: one cell per position of the answer's canvas

/** A cell's label: whitespace made visible, an end token as "end". */
function cellLabel(text, isEnd) {
  if (isEnd) return "end";
  const t = text.replace(/\n/g, "↵").replace(/\t/g, "⇥").replace(/^ +| +$/g, "");
  return t === "" ? "␣" : t;
}

class CanvasView {
  constructor() {
    this.root = el("div", "canvas-view", {
      "data-testid": "canvas", "data-step": "", "data-committed": "0", role: "group", "aria-label": "The answer's canvas",
    });
    this.grid = el("div", "cells", { "aria-hidden": "true" });
    this.off = el("p", "canvas-off", {}, "Reduced motion: the canvas is drawn by the replay when the answer is done.");
    this.off.hidden = true;
    this.stats = el("div", "stats", { "aria-live": "off" });
    const stat = (label, testid) => {
      const span = el("span", "", {}, label + " ");
      const b = el("b", "", { "data-testid": testid }, "–");
      span.append(b);
      this.stats.append(span);
      return b;
    };
    this.stepEl = stat("step", "step");
    this.msEl = stat("step time", "step-time");
    this.committedEl = stat("committed", "committed");
    this.rateEl = stat("speed", "rate");
    this.root.append(this.grid, this.off, this.stats);
    this.cells = []; // the cell elements
    this.shown = []; // [label, class, title] each cell shows, to touch only what changes
  }

  /** Draws one state: cells (null = masked), and the step's committed / changed / block / ends. */
  draw(s) {
    const n = s.cells.length;
    while (this.cells.length < n) {
      const c = el("span", "cell masked", { "data-testid": "cell" });
      this.grid.append(c);
      this.cells.push(c);
      this.shown.push(["", "cell masked", ""]);
    }
    const isNew = new Set(s.committed);
    const changed = new Set(s.changed || []);
    const ends = new Set(s.ends || []);
    const firstEnd = ends.size ? Math.min(...ends) : Infinity;
    const [b0, b1] = s.block || [0, 0];
    for (let i = 0; i < n; i++) {
      const text = s.cells[i];
      let cls = "cell";
      if (text === null) cls += " masked";
      if (i >= b0 && i < b1) cls += " in-block";
      if (isNew.has(i)) cls += " new";
      if (changed.has(i)) cls += " changed";
      if (ends.has(i)) cls += " end";
      if (i > firstEnd) cls += " after-end";
      const label = text === null ? "" : cellLabel(text, ends.has(i));
      const title = text === null ? "position " + i + ": masked" : "position " + i + ": " + JSON.stringify(text);
      const was = this.shown[i];
      const c = this.cells[i];
      if (was[1] !== cls) c.className = cls;
      if (was[0] !== label) c.textContent = label;
      if (was[2] !== title) c.title = title;
      this.shown[i] = [label, cls, title];
    }
    this.root.dataset.block = s.block ? s.block.join(",") : "";
  }

  /** The numbers under the cells. */
  count(step, ms, committed, size, rate) {
    this.root.dataset.step = String(step);
    this.root.dataset.committed = String(committed);
    this.stepEl.textContent = String(step);
    this.msEl.textContent = ms === null ? "–" : ms.toFixed(ms < 10 ? 2 : 1) + " ms";
    this.committedEl.textContent = committed + " / " + size;
    this.rateEl.textContent = rate === null ? "–" : rate.toFixed(rate < 10 ? 1 : 0) + " tok/s";
  }

  setLive(drawing) {
    this.grid.hidden = !drawing;
    this.off.hidden = drawing;
  }
}

// ---------------------------------------------------------------------------------------------
// One assistant answer: its live canvas, its text, and the recorded steps for the replay

class Turn {
  constructor(list) {
    this.li = el("li", "msg assistant");
    this.li.append(el("div", "who", {}, "assistant"));
    this.view = new CanvasView();
    this.answer = el("div", "answer", { "data-testid": "answer", "aria-live": "polite" });
    this.meta = el("div", "meta");
    this.li.append(this.view.root, this.answer, this.meta);
    list.append(this.li);
    this.controller = new AbortController();
    this.text = ""; // the answer's final text so far (the stream's deltas)
    this.steps = []; // per step: {step, ms, total, committed, changed, block, ends, diff: [[pos, text]]}
    this.last = []; // the cells after the latest step
    this.totalMs = 0;
    this.started = performance.now();
    this.queue = []; // received steps not drawn yet: {rec, cells, arrived}
    this.pumping = null; // the timer of the next draw
    this.shownAt = -Infinity; // when the last step was drawn
    this.drainWaiters = [];
    this.usage = null;
    this.finish = null;
    this.view.setLive(!reducedMotion());
  }

  onCanvas(ev) {
    const cells = ev.cells || [];
    const diff = [];
    for (let i = 0; i < cells.length; i++) if (cells[i] !== (i < this.last.length ? this.last[i] : null)) diff.push([i, cells[i]]);
    this.last = cells;
    const ms = typeof ev.step_ms === "number" ? ev.step_ms : null;
    this.totalMs += ms || 0;
    const total = typeof ev.committed_total === "number" ? ev.committed_total : cells.filter((c) => c !== null).length;
    const rec = {
      step: ev.step + 1,
      ms,
      total,
      committed: ev.committed || [],
      changed: ev.changed || [],
      block: ev.block || null,
      ends: ev.ends || [],
      diff,
      rateMs: this.totalMs,
    };
    this.steps.push(rec);
    this.queue.push({ rec, cells, arrived: performance.now() });
    this.pump();
  }

  /** Draws the queued steps, MIN_STEP_MS apart (see there). */
  pump() {
    if (this.pumping) return;
    for (;;) {
      if (!this.queue.length) {
        for (const f of this.drainWaiters.splice(0)) f();
        return;
      }
      const now = performance.now();
      const atOnce = reducedMotion() || document.hidden;
      if (this.queue.length > 1 && now - this.queue[0].arrived > MAX_LAG_MS) this.queue.splice(0, this.queue.length - 1);
      const wait = atOnce ? 0 : this.shownAt + MIN_STEP_MS - now;
      if (wait > 0) {
        this.pumping = setTimeout(() => {
          this.pumping = null;
          this.pump();
        }, wait);
        return;
      }
      const { rec, cells } = this.queue.shift();
      if (!reducedMotion()) this.view.draw({ cells, ...rec });
      this.showCount(rec, cells.length);
      this.shownAt = now;
    }
  }

  /** Resolves once every step received so far is drawn. */
  drained() {
    return new Promise((resolve) => {
      this.drainWaiters.push(resolve);
      this.pump();
    });
  }

  /** Draws the newest step now, dropping the queue (stop, errors). */
  flush() {
    clearTimeout(this.pumping);
    this.pumping = null;
    this.queue.splice(0, Math.max(0, this.queue.length - 1));
    this.shownAt = -Infinity;
    this.pump();
  }

  showCount(rec, size) {
    const rate = rec.rateMs > 0 ? rec.total / (rec.rateMs / 1000) : null;
    this.view.count(rec.step, rec.ms, rec.total, size, rate);
  }

  /** The cells after step index k (0-based into this.steps). */
  cellsAt(k) {
    const cells = new Array(this.last.length).fill(null);
    for (let j = 0; j <= k; j++) for (const [i, t] of this.steps[j].diff) cells[i] = t;
    return cells;
  }

  showStep(k) {
    const rec = this.steps[k];
    this.view.draw({ cells: this.cellsAt(k), ...rec });
    this.showCount(rec, this.last.length);
  }

  addNote(text, kind) {
    const note = el("div", "note " + (kind || ""), { role: "alert", "data-testid": "error" }, text);
    this.li.append(note);
  }

  /** The stream ended with [DONE]: the canvas folds into the message, with a replay toggle. */
  done() {
    this.answer.textContent = this.text;
    const secs = (performance.now() - this.started) / 1000;
    const parts = [];
    if (this.usage) parts.push(this.usage.completion_tokens + " tokens");
    parts.push(this.steps.length + " steps", secs.toFixed(secs < 10 ? 2 : 1) + " s");
    if (this.finish === "length") parts.push("canvas full");
    for (const p of parts) this.meta.append(el("span", "", {}, p));
    if (this.steps.length) {
      const replay = el("button", "ghost", { type: "button", "data-testid": "replay", "aria-expanded": "false" }, "Replay canvas");
      replay.addEventListener("click", () => this.toggleReplay(replay));
      this.meta.append(replay);
    }
    this.collapse();
  }

  collapse() {
    const root = this.view.root;
    if (reducedMotion()) {
      root.hidden = true;
      return;
    }
    root.style.maxHeight = root.scrollHeight + "px";
    void root.offsetHeight; // start the transition from the full height
    root.classList.add("collapsed");
    root.addEventListener("transitionend", () => {
      if (root.classList.contains("collapsed")) root.hidden = true;
    }, { once: true });
  }

  toggleReplay(button) {
    const root = this.view.root;
    const open = root.hidden || root.classList.contains("collapsed");
    clearInterval(this.timer);
    button.setAttribute("aria-expanded", String(open));
    button.textContent = open ? "Hide canvas" : "Replay canvas";
    if (!open) {
      root.hidden = true;
      return;
    }
    root.hidden = false;
    root.classList.remove("collapsed");
    root.style.maxHeight = "";
    this.view.setLive(true);
    if (!this.bar) this.buildReplayBar();
    const last = this.steps.length - 1;
    if (reducedMotion()) {
      this.seek(last);
    } else {
      this.play();
    }
  }

  buildReplayBar() {
    this.bar = el("div", "replay-bar");
    this.playBtn = el("button", "ghost", { type: "button", "data-testid": "replay-play" }, "Pause");
    this.range = el("input", "", {
      type: "range", min: "0", max: String(this.steps.length - 1), value: "0", "data-testid": "replay-step",
      "aria-label": "Replay step",
    });
    this.rangeLabel = el("span", "", {}, "");
    this.playBtn.addEventListener("click", () => (this.timer ? this.pause() : this.play()));
    this.range.addEventListener("input", () => {
      this.pause();
      this.seek(Number(this.range.value));
    });
    this.bar.append(this.playBtn, this.range, this.rangeLabel);
    this.view.root.append(this.bar);
  }

  seek(k) {
    this.range.value = String(k);
    this.rangeLabel.textContent = "step " + (k + 1) + " of " + this.steps.length;
    this.showStep(k);
  }

  play() {
    const last = this.steps.length - 1;
    let k = Number(this.range.value) >= last ? 0 : Number(this.range.value);
    // About three seconds for the whole answer, between 16 and 150 ms a step.
    const every = Math.max(16, Math.min(150, 3000 / this.steps.length));
    this.seek(k);
    this.playBtn.textContent = "Pause";
    this.timer = setInterval(() => {
      if (++k > last) return this.pause();
      this.seek(k);
    }, every);
  }

  pause() {
    clearInterval(this.timer);
    this.timer = null;
    if (this.playBtn) this.playBtn.textContent = "Play";
  }
}

// ---------------------------------------------------------------------------------------------
// The chat

/** (event, data) of a text/event-stream body, as the SSE spec splits them. */
async function* sseEvents(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let event = "";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) event = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (data.length) yield { event, data: data.join("\n") };
    }
  }
}

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").disabled = !busy;
  $("new-chat").disabled = busy;
}

function scrollDown() {
  const s = $("scroll");
  s.scrollTop = s.scrollHeight;
}

function addUser(text) {
  const li = el("li", "msg user");
  li.append(el("div", "who", {}, "you"), el("div", "text", {}, text));
  $("messages").append(li);
}

async function send() {
  if (page.turn) return;
  const prompt = $("prompt");
  const text = prompt.value;
  if (!text.trim()) return;
  prompt.value = "";
  $("intro").hidden = true;
  const system = fields().system.value.trim();
  const messages = [];
  if (system) messages.push({ role: "system", content: system });
  messages.push(...page.history, { role: "user", content: text });
  addUser(text);
  const turn = new Turn($("messages"));
  page.turn = turn;
  setBusy(true);
  scrollDown();
  const body = Object.assign(settingsBody(), {
    messages,
    stream: true,
    stream_options: { include_usage: true },
    dllm: { canvas: true },
  });
  let ended = false;
  try {
    const res = await fetch("/v1/chat/completions", {
      method: "POST",
      headers: authHeaders({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal: turn.controller.signal,
    });
    if (!res.ok) {
      const msg = await errorText(res);
      if (res.status === 401) {
        turn.addNote("The server refused the API key (401): enter it again above.");
        sessionStorage.removeItem(KEY_STORAGE);
        setStatus("key", "API key needed");
        showKeyForm("The server did not accept the key.");
      } else {
        turn.addNote("The server answered " + res.status + ": " + msg);
      }
      turn.view.root.hidden = true;
      ended = true;
    } else {
      for await (const { event, data } of sseEvents(res.body)) {
        if (event === "canvas") {
          turn.onCanvas(JSON.parse(data));
        } else if (data === "[DONE]") {
          ended = true;
          break;
        } else {
          const j = JSON.parse(data);
          if (j.error) {
            turn.addNote("The request failed: " + j.error.message);
            ended = true;
            continue;
          }
          if (j.usage) turn.usage = j.usage;
          const choice = j.choices && j.choices[0];
          if (choice && choice.delta && choice.delta.content) turn.text += choice.delta.content;
          if (choice && choice.finish_reason) turn.finish = choice.finish_reason;
        }
        if (turn.steps.length % 8 === 1) scrollDown();
      }
      if (ended && turn.finish) {
        await turn.drained();
        turn.done();
        page.history.push({ role: "user", content: text }, { role: "assistant", content: turn.text });
      } else if (!ended) {
        throw new Error("the stream ended early");
      }
    }
  } catch (e) {
    turn.flush();
    const at = turn.steps.length ? " after step " + turn.steps.length : "";
    if (turn.controller.signal.aborted) {
      turn.answer.textContent = turn.text;
      turn.addNote("Stopped" + at + ". The server cancelled the request when the stream closed.", "stopped");
    } else {
      turn.answer.textContent = turn.text;
      turn.addNote("Lost the connection to the server" + at + ": it stopped or crashed. " +
        "The status above shows when it is back.");
      watchServer();
    }
  } finally {
    page.turn = null;
    setBusy(false);
    scrollDown();
  }
}

function stop() {
  if (!page.turn) return;
  page.turn.controller.abort();
  page.turn.flush(); // the stream may be complete and only the drawing left
}

// ---------------------------------------------------------------------------------------------
// Wiring

function init() {
  const saved = localStorage.getItem(MOTION_STORAGE);
  const prefers = window.matchMedia && window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  setReducedMotion(saved === null ? prefers : saved === "1", false);
  toggleSettings(window.innerWidth >= 1180);

  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    send();
  });
  $("prompt").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      send();
    } else if (e.key === "Escape") {
      stop();
    }
  });
  $("stop").addEventListener("click", stop);
  $("new-chat").addEventListener("click", () => {
    page.history = [];
    $("messages").replaceChildren();
    $("intro").hidden = false;
    $("prompt").focus();
  });
  $("settings-toggle").addEventListener("click", () => toggleSettings($("settings").hidden));
  $("settings-close").addEventListener("click", () => toggleSettings(false));
  $("settings-reset").addEventListener("click", resetSettings);
  $("reduced-motion").addEventListener("change", (e) => setReducedMotion(e.target.checked, true));
  $("settings-form").addEventListener("submit", (e) => e.preventDefault());
  fields().steps.addEventListener("input", () => (page.stepsEdited = true));
  fields().max_tokens.addEventListener("input", () => {
    // Without --steps the server runs as many steps as max tokens: the panel follows until edited.
    if (page.props && page.props.steps_follow_max_tokens && !page.stepsEdited) fields().steps.value = fields().max_tokens.value;
  });
  $("key-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const key = $("api-key").value.trim();
    if (!key) return;
    sessionStorage.setItem(KEY_STORAGE, key);
    $("api-key").value = "";
    loadProps();
  });
  $("forget-key").addEventListener("click", () => {
    sessionStorage.removeItem(KEY_STORAGE);
    $("forget-key").hidden = true;
    loadProps();
  });
  setStatus("busy", "connecting…");
  loadProps();
  $("prompt").focus();
}

init();
