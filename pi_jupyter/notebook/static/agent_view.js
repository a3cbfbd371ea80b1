// AgentView: the browser half of pi_jupyter.notebook.agent_view.AgentView (an anywidget ESM).
//
// Self-contained on purpose: anywidget loads one module per widget, so the Markdown renderer
// and the snapshot/ops store live here. Nothing in this file assigns HTML strings: every
// piece of model or tool text reaches the DOM through createElement/textContent.
//
// Transport: the kernel sends
//   * traits `transcript` + `transcript_seq`: a snapshot of every item, at message boundaries;
//   * custom messages {type: "ops", ops: [{s, o, ...}]}: numbered changes, coalesced (<= ~30/s);
//   * custom message {type: "state", seq, items?, status}: the full state, in reply to "sync".
// Store keeps the ops applied after its snapshot and replays those newer than each new
// snapshot, so an op already folded into a snapshot is never applied twice, in any order.

const STATE_LABELS = {
  idle: "idle",
  running: "working",
  streaming: "streaming",
  tool: "running tool",
  compacting: "compacting",
  retrying: "retrying",
  stopping: "stopping…",
  done: "done",
  aborted: "aborted",
  error: "error",
};

function clone(value) {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

// ---------------------------------------------------------------------------------- store

export class Store {
  constructor() {
    this.items = [];
    this.byId = new Map();
    this.calls = new Map(); // tool call id -> block
    this.base = -1; // seq of the snapshot the items were built from
    this.applied = 0; // seq of the last change applied
    this.log = []; // ops applied after `base`, replayed on a newer snapshot
    this.dirty = new Set(); // ids of items to re-render
    this.structural = true; // the item list itself changed
  }

  /** Replace the state by a snapshot at `seq`; returns false for a snapshot older than ours. */
  loadSnapshot(items, seq) {
    if (typeof seq !== "number" || seq < this.base) return false;
    this.items = clone(items || []);
    this._reindex();
    this.base = seq;
    this.applied = seq;
    this.log = this.log.filter((op) => op.s > seq);
    for (const op of this.log) this._apply(op);
    this.structural = true;
    return true;
  }

  /** Apply the ops newer than what is already applied. */
  applyOps(ops) {
    for (const op of ops || []) {
      if (typeof op.s !== "number" || op.s <= this.applied) continue;
      this._apply(op);
      this.log.push(op);
    }
  }

  _reindex() {
    this.byId = new Map();
    this.calls = new Map();
    for (const item of this.items) this._index(item);
  }

  _index(item) {
    this.byId.set(item.id, item);
    for (const block of item.blocks || []) {
      if (block && block.type === "toolCall" && block.id) this.calls.set(block.id, { item, block });
    }
  }

  _apply(op) {
    this.applied = op.s;
    switch (op.o) {
      case "add": {
        if (this.byId.has(op.item.id)) break;
        const item = clone(op.item);
        this.items.push(item);
        this._index(item);
        this.structural = true;
        break;
      }
      case "set": {
        const old = this.byId.get(op.item.id);
        if (!old) break;
        const item = clone(op.item);
        this.items[this.items.indexOf(old)] = item;
        this._index(item);
        this.dirty.add(item.id);
        break;
      }
      case "meta": {
        const item = this.byId.get(op.i);
        if (!item) break;
        Object.assign(item, clone(op.m));
        this.dirty.add(item.id);
        break;
      }
      case "blk": {
        const item = this.byId.get(op.i);
        if (!item) break;
        item.blocks = item.blocks || [];
        while (item.blocks.length <= op.b) item.blocks.push({ type: "other", text: "" });
        const old = item.blocks[op.b];
        const block = clone(op.block);
        if (old && old.x && block.id === old.id && !block.x) block.x = old.x;
        item.blocks[op.b] = block;
        if (block.type === "toolCall" && block.id) this.calls.set(block.id, { item, block });
        this.dirty.add(item.id);
        break;
      }
      case "d": {
        const item = this.byId.get(op.i);
        const block = item && item.blocks && item.blocks[op.b];
        if (!block) break;
        block.text = (block.text || "") + op.t;
        this.dirty.add(item.id);
        break;
      }
      case "x": {
        const hit = this.calls.get(op.c);
        if (!hit) break;
        hit.block.x = clone(op.x);
        this.dirty.add(hit.item.id);
        break;
      }
      default:
        break; // an op a newer kernel side knows and we do not: skip it
    }
  }
}

// ------------------------------------------------------------------------- markdown

const SAFE_URL = /^(https?:|mailto:|#)/i;
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/;
const HEADING = /^ {0,3}(#{1,6})(?:\s+(.*?))?\s*#*\s*$/;
const HR = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}> ?(.*)$/;
const LIST = /^( *)([-*+]|\d{1,9}[.)])(\s+|$)(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;
const PUNCT = /[!-/:-@[-`{-~]/;

function el(doc, tag, cls, text) {
  const node = doc.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = text;
  return node;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  const cells = [];
  let cur = "";
  for (let i = 0; i < s.length; i++) {
    if (s[i] === "\\" && s[i + 1] === "|") {
      cur += "|";
      i++;
    } else if (s[i] === "|") {
      cells.push(cur.trim());
      cur = "";
    } else cur += s[i];
  }
  cells.push(cur.trim());
  return cells;
}

function startsBlock(line, next) {
  return (
    FENCE.test(line) ||
    HEADING.test(line) ||
    HR.test(line) ||
    QUOTE.test(line) ||
    (LIST.test(line) && LIST.exec(line)[4].trim() !== "") ||
    (line.includes("|") && next !== undefined && TABLE_SEP.test(next) && next.includes("-"))
  );
}

/** Parse Markdown into a small block tree (fences left open at the end are code: streaming). */
export function parseBlocks(src) {
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) {
      i++;
      continue;
    }
    let m = FENCE.exec(line);
    if (m) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length) {
        const close = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(lines[i]);
        if (close && close[1][0] === fence[0] && close[1].length >= fence.length) {
          i++;
          break;
        }
        body.push(lines[i]);
        i++;
      }
      out.push({ type: "code", lang: m[2] || "", text: body.join("\n") });
      continue;
    }
    m = HEADING.exec(line);
    if (m) {
      out.push({ type: "heading", level: m[1].length, text: m[2] || "" });
      i++;
      continue;
    }
    if (HR.test(line)) {
      out.push({ type: "hr" });
      i++;
      continue;
    }
    if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && QUOTE.test(lines[i])) {
        inner.push(QUOTE.exec(lines[i])[1]);
        i++;
      }
      out.push({ type: "quote", children: parseBlocks(inner.join("\n")) });
      continue;
    }
    m = LIST.exec(line);
    if (m && m[4].trim() !== "") {
      const ordered = /\d/.test(m[2]);
      const baseIndent = m[1].length;
      const list = { type: "list", ordered, start: ordered ? parseInt(m[2], 10) : 1, items: [] };
      while (i < lines.length) {
        const lm = LIST.exec(lines[i]);
        if (!lm || lm[1].length !== baseIndent || /\d/.test(lm[2]) !== ordered) break;
        const contentIndent = lm[1].length + lm[2].length + Math.max(1, lm[3].length);
        const body = [lm[4]];
        i++;
        while (i < lines.length) {
          const l = lines[i];
          if (!l.trim()) {
            // A blank line continues the item only if the next line is indented under it.
            const nxt = lines[i + 1];
            if (nxt !== undefined && nxt.trim() && nxt.length - nxt.trimStart().length >= contentIndent) {
              body.push("");
              i++;
              continue;
            }
            break;
          }
          const indent = l.length - l.trimStart().length;
          if (indent >= contentIndent || (indent > baseIndent && LIST.test(l))) {
            body.push(l.slice(Math.min(indent, contentIndent)));
            i++;
            continue;
          }
          if (indent <= baseIndent && (LIST.test(l) || startsBlock(l, lines[i + 1]))) break;
          body.push(l.trim()); // lazy continuation of the item's paragraph
          i++;
        }
        list.items.push(parseBlocks(body.join("\n")));
        while (i < lines.length && !lines[i].trim()) {
          const nxt = lines[i + 1];
          const nm = nxt !== undefined && LIST.exec(nxt);
          if (nm && nm[1].length === baseIndent) i++;
          else break;
        }
      }
      out.push(list);
      continue;
    }
    if (line.includes("|") && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes("-")) {
      const head = splitRow(line);
      const aligns = splitRow(lines[i + 1]).map((c) =>
        c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : "",
      );
      const rows = [];
      i += 2;
      while (i < lines.length && lines[i].trim() && lines[i].includes("|")) {
        rows.push(splitRow(lines[i]));
        i++;
      }
      out.push({ type: "table", head, aligns, rows });
      continue;
    }
    const para = [line];
    i++;
    while (i < lines.length && lines[i].trim() && !startsBlock(lines[i], lines[i + 1])) {
      para.push(lines[i]);
      i++;
    }
    out.push({ type: "para", text: para.join("\n") });
  }
  return out;
}

function findRun(s, from, run) {
  // The next occurrence of exactly `run` (a run of one repeated character) at or after `from`.
  const ch = run[0];
  let j = s.indexOf(run, from);
  while (j !== -1) {
    let end = j + run.length;
    if (s[j - 1] !== ch && s[end] !== ch) return j;
    while (s[end] === ch) end++;
    j = s.indexOf(run, end);
  }
  return -1;
}

function closingDelim(s, from, delim) {
  // A closing emphasis delimiter: not preceded by whitespace; code spans in between are skipped.
  let j = from;
  while (j < s.length) {
    if (s[j] === "`") {
      let n = 1;
      while (s[j + n] === "`") n++;
      const close = findRun(s, j + n, "`".repeat(n));
      j = close === -1 ? j + n : close + n;
      continue;
    }
    if (s[j] === "\\") {
      j += 2;
      continue;
    }
    if (s[j] === delim[0]) {
      let run = 1;
      while (s[j + run] === delim[0]) run++;
      // A run of another length belongs to other emphasis (`*a **b** c*`): skip it whole.
      const after = s[j + run];
      const fits = run === delim.length && j > from && !/\s/.test(s[j - 1]);
      if (fits && !(delim[0] === "_" && after && /[A-Za-z0-9]/.test(after))) return j;
      j += run;
      continue;
    }
    j++;
  }
  return -1;
}

function safeHref(url) {
  const u = url.trim();
  return SAFE_URL.test(u) ? u : null;
}

function link(doc, href, children) {
  const a = doc.createElement("a");
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener noreferrer";
  for (const c of children) a.appendChild(c);
  return a;
}

/** Inline Markdown (code, emphasis, strike, links, autolinks) as a list of DOM nodes. */
export function renderInline(doc, s) {
  const out = [];
  let buf = "";
  const flush = () => {
    if (buf) out.push(doc.createTextNode(buf));
    buf = "";
  };
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === "\\" && i + 1 < s.length) {
      if (s[i + 1] === "\n") {
        flush();
        out.push(doc.createElement("br"));
        i += 2;
        continue;
      }
      if (PUNCT.test(s[i + 1])) {
        buf += s[i + 1];
        i += 2;
        continue;
      }
    }
    if (c === "\n") {
      if (buf.endsWith("  ")) {
        buf = buf.replace(/ +$/, "");
        flush();
        out.push(doc.createElement("br"));
      } else buf += "\n";
      i++;
      continue;
    }
    if (c === "`") {
      let n = 1;
      while (s[i + n] === "`") n++;
      const close = findRun(s, i + n, "`".repeat(n));
      if (close !== -1) {
        let code = s.slice(i + n, close).replace(/\n/g, " ");
        if (code.length > 2 && code.startsWith(" ") && code.endsWith(" ") && code.trim()) code = code.slice(1, -1);
        flush();
        out.push(el(doc, "code", null, code));
        i = close + n;
        continue;
      }
      buf += "`".repeat(n);
      i += n;
      continue;
    }
    if (c === "[" || (c === "!" && s[i + 1] === "[")) {
      const open = c === "!" ? i + 1 : i;
      let depth = 0;
      let j = open;
      for (; j < s.length; j++) {
        if (s[j] === "\\") {
          j++;
          continue;
        }
        if (s[j] === "[") depth++;
        else if (s[j] === "]" && --depth === 0) break;
      }
      if (j < s.length && s[j + 1] === "(") {
        const m = /^\(\s*<?([^\s()<>]*(?:\([^\s()]*\)[^\s()<>]*)*)>?(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(s.slice(j + 1));
        if (m) {
          const label = s.slice(open + 1, j);
          const href = safeHref(m[1]);
          flush();
          const kids = c === "!" ? [doc.createTextNode("[image: " + (label || m[1]) + "]")] : renderInline(doc, label);
          if (href) out.push(link(doc, href, kids));
          else for (const k of kids) out.push(k);
          i = j + 1 + m[0].length;
          continue;
        }
      }
    }
    if (c === "<") {
      const m = /^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i.exec(s.slice(i));
      if (m) {
        flush();
        out.push(link(doc, m[1], [doc.createTextNode(m[1])]));
        i += m[0].length;
        continue;
      }
    }
    if ((c === "h" || c === "H") && !/[A-Za-z0-9]/.test(s[i - 1] || "")) {
      const m = /^https?:\/\/[^\s<>]+/i.exec(s.slice(i));
      if (m) {
        let url = m[0];
        while (/[.,;:!?'")\]*_]$/.test(url)) {
          if (url.endsWith(")") && (url.match(/\(/g) || []).length >= (url.match(/\)/g) || []).length) break;
          url = url.slice(0, -1);
        }
        flush();
        out.push(link(doc, url, [doc.createTextNode(url)]));
        i += url.length;
        continue;
      }
    }
    if (c === "~" && s[i + 1] === "~") {
      const close = closingDelim(s, i + 2, "~~");
      if (close !== -1 && !/\s/.test(s[i + 2] || " ")) {
        flush();
        const node = doc.createElement("del");
        for (const k of renderInline(doc, s.slice(i + 2, close))) node.appendChild(k);
        out.push(node);
        i = close + 2;
        continue;
      }
    }
    if (c === "*" || c === "_") {
      const intraword = c === "_" && /[A-Za-z0-9]/.test(s[i - 1] || "");
      if (!intraword) {
        const dbl = s[i + 1] === c ? c + c : null;
        if (dbl && s[i + 2] && !/\s/.test(s[i + 2])) {
          const close = closingDelim(s, i + 2, dbl);
          if (close !== -1) {
            flush();
            const node = doc.createElement("strong");
            for (const k of renderInline(doc, s.slice(i + 2, close))) node.appendChild(k);
            out.push(node);
            i = close + 2;
            continue;
          }
        }
        if (!dbl && s[i + 1] && !/\s/.test(s[i + 1])) {
          const close = closingDelim(s, i + 1, c);
          if (close !== -1) {
            flush();
            const node = doc.createElement("em");
            for (const k of renderInline(doc, s.slice(i + 1, close))) node.appendChild(k);
            out.push(node);
            i = close + 1;
            continue;
          }
        }
      }
    }
    buf += c;
    i++;
  }
  flush();
  return out;
}

function appendInline(doc, node, text) {
  for (const k of renderInline(doc, text)) node.appendChild(k);
  return node;
}

function renderBlocks(doc, blocks, parent) {
  for (const b of blocks) {
    switch (b.type) {
      case "code": {
        const pre = el(doc, "pre", "piav-code");
        const code = el(doc, "code", b.lang ? "language-" + b.lang : null, b.text);
        pre.appendChild(code);
        parent.appendChild(pre);
        break;
      }
      case "heading":
        parent.appendChild(appendInline(doc, doc.createElement("h" + b.level), b.text));
        break;
      case "hr":
        parent.appendChild(doc.createElement("hr"));
        break;
      case "quote": {
        const q = doc.createElement("blockquote");
        renderBlocks(doc, b.children, q);
        parent.appendChild(q);
        break;
      }
      case "list": {
        const list = doc.createElement(b.ordered ? "ol" : "ul");
        if (b.ordered && b.start !== 1) list.start = b.start;
        for (const itemBlocks of b.items) {
          const li = doc.createElement("li");
          // A tight item (one paragraph) renders without a <p> margin.
          if (itemBlocks.length === 1 && itemBlocks[0].type === "para") appendInline(doc, li, itemBlocks[0].text);
          else renderBlocks(doc, itemBlocks, li);
          list.appendChild(li);
        }
        parent.appendChild(list);
        break;
      }
      case "table": {
        const wrap = el(doc, "div", "piav-table-wrap");
        const table = doc.createElement("table");
        const thead = doc.createElement("thead");
        const tr = doc.createElement("tr");
        b.head.forEach((cell, k) => {
          const th = appendInline(doc, doc.createElement("th"), cell);
          if (b.aligns[k]) th.style.textAlign = b.aligns[k];
          tr.appendChild(th);
        });
        thead.appendChild(tr);
        table.appendChild(thead);
        const tbody = doc.createElement("tbody");
        for (const row of b.rows) {
          const r = doc.createElement("tr");
          b.head.forEach((_, k) => {
            const td = appendInline(doc, doc.createElement("td"), row[k] || "");
            if (b.aligns[k]) td.style.textAlign = b.aligns[k];
            r.appendChild(td);
          });
          tbody.appendChild(r);
        }
        table.appendChild(tbody);
        wrap.appendChild(table);
        parent.appendChild(wrap);
        break;
      }
      default:
        parent.appendChild(appendInline(doc, doc.createElement("p"), b.text));
    }
  }
  return parent;
}

/** Markdown text as a <div class="piav-md"> (safe: no HTML is ever interpreted). */
export function renderMarkdown(doc, text) {
  return renderBlocks(doc, parseBlocks(text || ""), el(doc, "div", "piav-md"));
}

// -------------------------------------------------------------------------- views

function fmtInt(n) {
  return Number(n || 0).toLocaleString("en-US");
}

function fmtDuration(ms) {
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(1) + " s";
  const m = Math.floor(ms / 60000);
  return m + " min " + Math.round((ms % 60000) / 1000) + " s";
}

function oneLine(text, max) {
  const s = String(text || "")
    .slice(0, max * 4)
    .replace(/\s+/g, " ")
    .trim();
  return s.length > max ? s.slice(0, max - 1) + "…" : s;
}

function argsPreview(text) {
  // The streamed arguments are JSON (raw while streaming, pretty at the end).
  try {
    const obj = JSON.parse(text);
    if (obj && typeof obj === "object" && !Array.isArray(obj)) {
      return oneLine(
        Object.entries(obj)
          .map(([k, v]) => k + "=" + (typeof v === "string" ? JSON.stringify(v) : JSON.stringify(v)))
          .join(", "),
        120,
      );
    }
  } catch (_e) {
    // still streaming: show the raw fragment
  }
  return oneLine(text, 120);
}

class View {
  constructor(model, el) {
    this.model = model;
    this.el = el;
    this.doc = el.ownerDocument || document;
    this.store = new Store();
    this.nodes = new Map(); // item id -> {node, json}
    this.ui = new Map(); // "item:block" -> open (a user's toggle survives re-renders)
    this.status = {};
    this.statusAt = 0;
    this.timer = null;
    this.renderQueued = false;
    this.build();
  }

  build() {
    const d = this.doc;
    this.root = el(d, "div", "piav-root");
    this.header = el(d, "div", "piav-header");
    this.titleEl = el(d, "span", "piav-title");
    this.header.appendChild(this.titleEl);
    this.body = el(d, "div", "piav-body");
    this.empty = el(d, "div", "piav-empty", "Waiting for the agent…");
    this.body.appendChild(this.empty);
    this.statusEl = el(d, "div", "piav-status");
    this.stateEl = el(d, "span", "piav-state");
    this.infoEl = el(d, "span", "piav-info");
    this.elapsedEl = el(d, "span", "piav-elapsed");
    this.stopBtn = el(d, "button", "piav-stop", "Stop");
    this.stopBtn.type = "button";
    this.stopBtn.title = "Stop the agent";
    this.stopBtn.addEventListener("click", () => {
      this.send({ type: "stop" });
      this.stopBtn.disabled = true;
      this.stopBtn.textContent = "Stopping…";
    });
    this.statusEl.append(this.stateEl, this.infoEl, this.elapsedEl, el(d, "span", "piav-spacer"), this.stopBtn);
    this.root.append(this.header, this.body, this.statusEl);
    this.el.appendChild(this.root);
  }

  start() {
    this.onTitle();
    this.onSnapshot();
    // A view rendered late (a display update, a re-opened tab) shows its transcript at once,
    // never "Waiting for the agent…" next to a finished status.
    this.renderNow();
    this.onStatus(this.model.get("status") || {});
    this._onSnap = () => this.onSnapshot();
    this._onStatus = () => this.onStatus(this.model.get("status") || {});
    this._onTitle = () => this.onTitle();
    this._onMsg = (msg) => this.onMessage(msg);
    this.model.on("change:transcript_seq", this._onSnap);
    this.model.on("change:transcript", this._onSnap);
    this.model.on("change:status", this._onStatus);
    this.model.on("change:title", this._onTitle);
    this.model.on("msg:custom", this._onMsg);
    // Ask for what happened since the snapshot (a view rendered or reloaded mid-run).
    this.send({ type: "sync", seq: this.store.base });
  }

  send(content) {
    try {
      this.model.send(content);
    } catch (err) {
      // No kernel (a saved notebook rendered from its widget state): nothing to ask or stop.
      console.warn("AgentView: cannot reach the kernel", err);
    }
  }

  stop() {
    this.model.off("change:transcript_seq", this._onSnap);
    this.model.off("change:transcript", this._onSnap);
    this.model.off("change:status", this._onStatus);
    this.model.off("change:title", this._onTitle);
    this.model.off("msg:custom", this._onMsg);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  onTitle() {
    const t = this.model.get("title") || "";
    this.titleEl.textContent = t;
    this.header.style.display = t ? "" : "none";
  }

  onSnapshot() {
    const items = this.model.get("transcript") || [];
    const seq = this.model.get("transcript_seq") || 0;
    if (items === this.lastSnapshot && seq === this.store.base) return; // both traits fire for one update
    this.lastSnapshot = items;
    if (this.store.loadSnapshot(items, seq)) this.queueRender();
  }

  onMessage(msg) {
    if (!msg || typeof msg !== "object") return;
    if (msg.type === "ops") {
      this.store.applyOps(msg.ops);
      this.queueRender();
    } else if (msg.type === "state") {
      if (Array.isArray(msg.items)) this.store.loadSnapshot(msg.items, msg.seq);
      if (msg.status) this.onStatus(msg.status);
      this.queueRender();
    }
  }

  queueRender() {
    if (this.renderQueued) return;
    this.renderQueued = true;
    const run = () => {
      if (!this.renderQueued) return;
      this.renderQueued = false;
      this.render();
    };
    // rAF pauses in a background tab; the timeout keeps the DOM current anyway.
    if (typeof requestAnimationFrame === "function") requestAnimationFrame(run);
    setTimeout(run, 60);
  }

  renderNow() {
    this.renderQueued = false;
    this.render();
  }

  render() {
    const store = this.store;
    const structural = store.structural;
    const dirty = store.dirty;
    store.structural = false;
    store.dirty = new Set();
    if (structural) {
      const keep = new Set();
      let prev = null;
      for (const item of store.items) {
        keep.add(item.id);
        const node = this.renderItem(item, false);
        const want = prev ? prev.nextSibling : this.body.firstChild;
        if (node !== want) this.body.insertBefore(node, want);
        prev = node;
      }
      for (const [id, entry] of this.nodes) {
        if (!keep.has(id)) {
          entry.node.remove();
          this.nodes.delete(id);
        }
      }
    } else {
      for (const id of dirty) {
        const item = store.byId.get(id);
        if (item) this.renderItem(item, true);
      }
    }
    this.empty.style.display = store.items.length ? "none" : "";
    if (this.empty.parentNode !== this.body || this.body.lastChild !== this.empty) this.body.appendChild(this.empty);
  }

  renderItem(item, replaceInPlace) {
    const json = JSON.stringify(item);
    const entry = this.nodes.get(item.id);
    if (entry && entry.json === json) return entry.node;
    const node = this.buildItem(item, entry);
    if (entry && entry.node !== node && entry.node.parentNode) entry.node.replaceWith(node);
    else if (!entry && replaceInPlace) this.body.insertBefore(node, this.empty);
    this.nodes.set(item.id, { node, json, blocks: node._piavBlocks || [] });
    return node;
  }

  buildItem(item, entry) {
    const d = this.doc;
    const kind = item.kind;
    if (kind === "assistant" || kind === "tool") {
      // Re-use the unchanged blocks of the old node, so only what streamed is rebuilt.
      const node = entry && entry.node.dataset.kind === kind ? entry.node : el(d, "div", "piav-item piav-" + kind);
      node.dataset.kind = kind;
      node.dataset.id = item.id;
      const old = (entry && entry.node === node && entry.blocks) || [];
      const blocks = [];
      const wanted = [];
      const streaming = kind === "assistant" && !item.stopReason;
      const last = (item.blocks || []).length - 1;
      (item.blocks || []).forEach((block, b) => {
        // Only the last block of a streaming message is still growing; its label says so.
        const live = streaming && b === last;
        const bjson = (live ? "~" : "") + JSON.stringify(block);
        const prev = old[b];
        const bnode = prev && prev.json === bjson ? prev.node : this.buildBlock(item, block, b, live);
        blocks.push({ json: bjson, node: bnode });
        wanted.push(bnode);
      });
      const footer = this.buildFooter(item);
      if (footer) wanted.push(footer);
      node.replaceChildren(...wanted);
      node._piavBlocks = blocks;
      return node;
    }
    const node = el(d, "div", "piav-item piav-" + kind);
    node.dataset.kind = kind;
    node.dataset.id = item.id;
    if (kind === "user") {
      node.appendChild(el(d, "div", "piav-label", "You"));
      node.appendChild(renderMarkdown(d, item.text));
      if (item.images) node.appendChild(el(d, "div", "piav-muted", `[${item.images} image${item.images > 1 ? "s" : ""}]`));
    } else if (kind === "custom") {
      node.appendChild(el(d, "div", "piav-label", item.customType || "custom"));
      node.appendChild(renderMarkdown(d, item.text));
    } else if (kind === "bash") {
      node.appendChild(el(d, "div", "piav-label", "Shell"));
      node.appendChild(el(d, "pre", "piav-code", "$ " + (item.command || "")));
      if (item.output) node.appendChild(el(d, "pre", "piav-output", item.output));
      if (item.exitCode) node.appendChild(el(d, "div", "piav-muted", "exit " + item.exitCode));
    } else if (kind === "summary") {
      const det = this.details(item.id + ":s", false, "piav-summary");
      det.appendChild(el(d, "summary", null, item.label || "Summary"));
      det.appendChild(renderMarkdown(d, item.text));
      node.appendChild(det);
    } else if (kind === "notice") {
      node.classList.add("piav-tone-" + (item.tone || "info"));
      if (item.active) node.appendChild(el(d, "span", "piav-spinner"));
      node.appendChild(el(d, "span", null, item.text || ""));
    } else {
      node.appendChild(el(d, "span", "piav-muted", item.text || "[" + kind + "]"));
    }
    return node;
  }

  details(key, defaultOpen, cls) {
    const det = el(this.doc, "details", cls);
    const initial = this.ui.has(key) ? this.ui.get(key) : defaultOpen;
    det.open = initial;
    // Setting `open` fires "toggle" too: only a change away from what we set is the user's.
    det.addEventListener("toggle", () => {
      if (det.open !== initial || this.ui.has(key)) this.ui.set(key, det.open);
    });
    return det;
  }

  buildBlock(item, block, b, live) {
    const d = this.doc;
    if (!block) return el(d, "span");
    if (block.type === "text") {
      const node = renderMarkdown(d, block.text);
      node.classList.add("piav-text");
      return node;
    }
    if (block.type === "thinking") {
      const det = this.details(item.id + ":" + b, false, "piav-thinking");
      const sum = el(d, "summary");
      sum.appendChild(el(d, "span", "piav-thinking-label", block.redacted ? "Thinking (redacted)" : live ? "Thinking…" : "Thought"));
      sum.appendChild(el(d, "span", "piav-muted", " " + oneLine(block.text, 90)));
      det.appendChild(sum);
      det.appendChild(renderMarkdown(d, block.text));
      return det;
    }
    if (block.type === "toolCall") return this.buildTool(item, block, b, live);
    return el(d, "div", "piav-muted", block.text || "");
  }

  buildTool(item, block, b, streaming) {
    const d = this.doc;
    const x = block.x || null;
    const status = x ? x.status : streaming ? "streaming" : "pending";
    const running = status === "running" || status === "streaming";
    const key = item.id + ":" + b;
    const det = this.details(key, running || status === "error", "piav-tool piav-tool-" + status);
    det.dataset.status = status;
    det.dataset.callId = block.id || "";
    const sum = el(d, "summary", "piav-tool-head");
    const icon = el(d, "span", "piav-tool-icon");
    if (running) icon.appendChild(el(d, "span", "piav-spinner"));
    else icon.textContent = status === "done" ? "✓" : status === "error" ? "✗" : "•";
    sum.appendChild(icon);
    sum.appendChild(el(d, "span", "piav-tool-name", block.name || "tool"));
    sum.appendChild(el(d, "span", "piav-tool-args", argsPreview(block.text)));
    const meta = x && typeof x.ms === "number" ? fmtDuration(x.ms) : status === "streaming" ? "preparing…" : status === "running" ? "running…" : "";
    sum.appendChild(el(d, "span", "piav-tool-meta", meta));
    det.appendChild(sum);
    const body = el(d, "div", "piav-tool-body");
    if (block.text) {
      body.appendChild(el(d, "div", "piav-label", "Arguments"));
      body.appendChild(el(d, "pre", "piav-code piav-args", block.text));
    }
    if (x && (x.output || status !== "running")) {
      body.appendChild(el(d, "div", "piav-label", status === "error" ? "Error" : status === "running" ? "Output so far" : "Result"));
      body.appendChild(el(d, "pre", "piav-output" + (status === "error" ? " piav-error-text" : ""), x.output || "(no output)"));
    }
    det.appendChild(body);
    return det;
  }

  buildFooter(item) {
    if (item.kind !== "assistant") return null;
    if (item.stopReason === "error") return el(this.doc, "div", "piav-item-error", "Error: " + (item.errorMessage || "unknown error"));
    if (item.stopReason === "aborted") return el(this.doc, "div", "piav-muted piav-aborted", "Stopped.");
    return null;
  }

  onStatus(st) {
    // The status must never run ahead of the transcript (a "done" next to a missing last line).
    if (this.renderQueued) this.renderNow();
    this.status = st || {};
    this.statusAt = performance.now();
    const state = this.status.state || "idle";
    this.root.dataset.state = state;
    this.stateEl.replaceChildren();
    if (this.status.running) this.stateEl.appendChild(el(this.doc, "span", "piav-spinner"));
    this.stateEl.appendChild(el(this.doc, "span", "piav-state-label piav-state-" + state, STATE_LABELS[state] || state));
    const bits = [];
    if (this.status.model) bits.push(this.status.model);
    const t = this.status.tokens || {};
    if (t.input || t.output) bits.push(`↑${fmtInt(t.input)} ↓${fmtInt(t.output)} tokens`);
    if (this.status.cost) bits.push("$" + Number(this.status.cost).toFixed(4));
    if (this.status.note) bits.push(this.status.note);
    this.infoEl.textContent = bits.join(" · ");
    const showStop = !!this.status.running;
    this.stopBtn.style.display = showStop ? "" : "none";
    if (state === "stopping") {
      this.stopBtn.disabled = true;
      this.stopBtn.textContent = "Stopping…";
    } else if (showStop) {
      this.stopBtn.disabled = false;
      this.stopBtn.textContent = "Stop";
    }
    this.tick();
    if (this.status.running && !this.timer) this.timer = setInterval(() => this.tick(), 250);
    if (!this.status.running && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }

  tick() {
    const base = Number(this.status.elapsedMs || 0);
    const ms = this.status.running ? base + (performance.now() - this.statusAt) : base;
    this.elapsedEl.textContent = ms > 0 ? fmtDuration(ms) : "";
  }
}

function render({ model, el }) {
  const view = new View(model, el);
  view.start();
  return () => view.stop();
}

export default { render };
