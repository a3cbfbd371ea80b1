// AgentView, part 2 of 4: Markdown to DOM, code highlighting and the copy button.
//
// Nothing here assigns HTML strings: every piece of model or tool text reaches the DOM
// through createElement/textContent, so no model output is ever interpreted as markup.

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

function renderBlocks(doc, blocks, parent, opts) {
  for (const b of blocks) {
    switch (b.type) {
      case "code": {
        parent.appendChild(codeBlock(doc, b.text, b.lang, !!(opts && opts.insert && opts.insert(b.text, b.lang))));
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
        renderBlocks(doc, b.children, q, opts);
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
          else renderBlocks(doc, itemBlocks, li, opts);
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

/**
 * Markdown text as a <div class="piav-md"> (safe: no HTML is ever interpreted). Every code block
 * gets "Copy"; `opts.insert(code, lang)` says which also get "Insert as cell" (none by default).
 */
export function renderMarkdown(doc, text, opts) {
  return renderBlocks(doc, parseBlocks(text || ""), el(doc, "div", "piav-md"), opts);
}

const INSERT_LANGS = new Set(["", "python", "py", "python3", "py3", "ipython", "ipython3"]);

/**
 * "Insert as cell" is for code the agent wrote for the user: a block fenced as Python (or not
 * labelled) that does not quote a tool's output (`outputs`: the tool results shown in this view).
 * The static rendering follows the same rule (pi_jupyter.views.static_html.insertable_code).
 */
export function insertableCode(code, lang, outputs) {
  const l = String(lang || "").trim().split(/\s+/)[0].toLowerCase();
  const body = String(code || "").trim();
  if (!INSERT_LANGS.has(l) || !body) return false;
  return !(outputs || []).some((o) => typeof o === "string" && o.includes(body));
}

// ------------------------------------------------------------------- code highlighting

const HL_KEYWORDS = {
  python:
    "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield match case self",
  js: "async await break case catch class const continue debugger default delete do else export extends false finally for function if import in instanceof let new null of return super switch this throw true try typeof undefined var void while yield",
  bash: "if then else elif fi for in do done while until case esac function return export local echo cd set unset",
  sql: "select from where and or not insert into values update set delete create table drop alter join left right inner outer on group by order having limit as distinct union null is in like",
};
const HL_ALIASES = { py: "python", python3: "python", ipython: "python", javascript: "js", ts: "js", typescript: "js", jsx: "js", tsx: "js", json: "js", sh: "bash", shell: "bash", zsh: "bash", console: "bash" };
const HL_COMMENT = { python: "#", bash: "#", js: "//", sql: "--" };
const hlSets = {};

function hlLanguage(lang) {
  const l = String(lang || "").toLowerCase();
  const name = HL_ALIASES[l] || l;
  if (!HL_KEYWORDS[name]) return null;
  if (!hlSets[name]) hlSets[name] = new Set(HL_KEYWORDS[name].split(" "));
  return name;
}

/** Colour `text` of language `lang` into `code` (spans for keywords, strings, comments, numbers); plain text otherwise. */
export function highlightInto(doc, code, text, lang) {
  const name = hlLanguage(lang);
  if (!name || text.length > 20000) {
    code.textContent = text;
    return;
  }
  const comment = HL_COMMENT[name].replace(/[/]/g, "\\/");
  const token = new RegExp(
    `(${comment}[^\\n]*|/\\*[\\s\\S]*?\\*/)|("""[\\s\\S]*?"""|'''[\\s\\S]*?'''|"(?:[^"\\\\\\n]|\\\\.)*"|'(?:[^'\\\\\\n]|\\\\.)*'|\`(?:[^\`\\\\]|\\\\.)*\`)|(\\b\\d[\\d_]*(?:\\.\\d+)?(?:e[+-]?\\d+)?\\b)|([A-Za-z_][\\w]*)`,
    "g",
  );
  const words = hlSets[name];
  let at = 0;
  let m;
  const plain = (s) => s && code.appendChild(doc.createTextNode(s));
  while ((m = token.exec(text)) !== null) {
    if (m[4] !== undefined && !words.has(m[4])) continue; // an ordinary name stays in the plain run
    plain(text.slice(at, m.index));
    const cls = m[1] !== undefined ? "c" : m[2] !== undefined ? "s" : m[3] !== undefined ? "n" : "k";
    if (cls === "c" && m[1].startsWith("/*") && name !== "js") {
      // only C-style languages have block comments
      plain(m[0]);
    } else {
      code.appendChild(el(doc, "span", "piav-hl-" + cls, m[0]));
    }
    at = m.index + m[0].length;
  }
  plain(text.slice(at));
}

/** A fenced code block: highlighted, with "Copy", and "Insert as cell" when `insertable` (the view handles it: it knows the notebook). */
function codeBlock(doc, text, lang, insertable) {
  const wrap = el(doc, "div", "piav-codewrap");
  const pre = el(doc, "pre", "piav-code");
  const code = el(doc, "code", lang ? "language-" + lang : null);
  highlightInto(doc, code, text, lang);
  pre.appendChild(code);
  const acts = el(doc, "div", "piav-code-acts");
  const copy = el(doc, "button", "piav-copy", "Copy");
  copy.type = "button";
  copy.title = "Copy the code";
  copy.addEventListener("click", (ev) => {
    ev.preventDefault();
    copyText(text).then((ok) => {
      copy.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => (copy.textContent = "Copy"), 1200);
    });
  });
  acts.append(copy);
  if (insertable) {
    const insert = el(doc, "button", "piav-insert", "Insert as cell");
    insert.type = "button";
    insert.title = "Put this code in a new cell below this one";
    insert._piavCode = text;
    acts.append(insert);
  }
  wrap.append(acts, pre);
  return wrap;
}
