// The exported session page: one branch shown at a time (a click on a node of the tree, a branch
// or a match shows its branch), and a search over every branch with a count, the current match
// highlighted and scrolled to, and next / previous (Enter / Shift+Enter). Without JavaScript
// every entry reads in file order.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("pi-data").textContent);
  var pane = document.getElementById("transcript");
  var tree = document.getElementById("tree");
  document.body.classList.add("js");
  var shown = null;

  function path(id) {
    var out = [], seen = {};
    while (id && !seen[id] && Object.prototype.hasOwnProperty.call(D.parents, id)) {
      seen[id] = 1;
      out.push(id);
      id = D.parents[id];
    }
    return out;
  }
  function entryEl(id) { return document.getElementById("e-" + id); }
  function nodes() { return tree.querySelectorAll("g.node"); }
  function nodeIds(g) {
    var t = g.querySelector("title");
    return t && Object.prototype.hasOwnProperty.call(D.nodes, t.textContent) ? D.nodes[t.textContent] : null;
  }
  function leafOf(id) {
    if (shown && path(shown).indexOf(id) >= 0) return shown;
    for (var i = 0; i < D.leaves.length; i++) if (path(D.leaves[i]).indexOf(id) >= 0) return D.leaves[i];
    return id;
  }

  function show(leaf, scrollTo) {
    shown = leaf;
    pane.querySelectorAll(".entry.on").forEach(function (e) { e.classList.remove("on"); });
    path(leaf).forEach(function (id) { var e = entryEl(id); if (e) e.classList.add("on"); });
    var selected = null;
    nodes().forEach(function (g) {
      var ids = nodeIds(g), on = !!ids && ids.indexOf(leaf) >= 0;
      g.classList.toggle("sel", on);
      if (on) selected = g;
    });
    if (selected) reveal(selected);
    var target = scrollTo === false ? null : entryEl(scrollTo || leaf);
    if (target) pane.scrollTop = target.offsetTop - pane.offsetTop;
  }

  nodes().forEach(function (g) {
    g.addEventListener("click", function (ev) {
      ev.preventDefault();
      var ids = nodeIds(g);
      if (ids) show(ids[ids.length - 1], ids[0]);
    });
  });
  document.querySelectorAll("a[data-leaf]").forEach(function (a) {
    a.addEventListener("click", function (ev) { ev.preventDefault(); show(a.dataset.leaf); });
  });
  // The tree is drawn as large as the pane allows, never above its own size, and never so small
  // that its node text reads under READABLE_PX (then the pane scrolls, to the current node); "whole
  // tree" fits it all. The smallest scale is worked out from the picture's own font size.
  var svg = tree.querySelector("svg");
  var fit = document.getElementById("tree-fit");
  var whole = false;
  var READABLE_PX = 11;
  function minScale(w) {
    var sizes = {}, best = 10, most = 0;
    svg.querySelectorAll("text[font-size]").forEach(function (t) {
      var s = parseFloat(t.getAttribute("font-size"));
      if (s > 0) sizes[s] = (sizes[s] || 0) + 1;
    });
    Object.keys(sizes).forEach(function (s) { if (sizes[s] > most) { most = sizes[s]; best = +s; } });
    var vb = svg.viewBox && svg.viewBox.baseVal && svg.viewBox.baseVal.width ? svg.viewBox.baseVal.width : w;
    return Math.min(1.5, READABLE_PX / (best * (w / vb))); // the node text's common size, READABLE_PX on screen
  }
  function size() {
    if (!svg || !svg.width || !svg.width.baseVal) return;
    var w = svg.width.baseVal.value, h = svg.height.baseVal.value;
    if (!w || !h) return;
    var k = Math.min(1, Math.max(50, tree.clientWidth - 16) / w);
    if (!whole) k = Math.max(k, minScale(w));
    svg.style.width = w * k + "px";
    svg.style.height = h * k + "px";
    svg.style.margin = w * k > tree.clientWidth ? "0" : "0 auto"; // centred when it fits; from the left edge when it scrolls
  }
  // Bring a node into the tree pane with as much of its branch above it as fits: the pane stays at its
  // left (and top) edge when that shows them, else it scrolls to the start of the part of the branch
  // that fits, so the node and the turns that led to it read whole rather than cut at the edge.
  function reveal(g) {
    var pane = tree.getBoundingClientRect(), sx = tree.scrollLeft, sy = tree.scrollTop;
    function at(el) {
      var b = el.getBoundingClientRect();
      return { l: b.left - pane.left + sx, r: b.right - pane.left + sx, t: b.top - pane.top + sy, b: b.bottom - pane.top + sy };
    }
    var pad = 8, room = tree.clientWidth - 2 * pad, tall = tree.clientHeight - 2 * pad;
    var box = at(g);
    var onPath = shown ? path(shown) : [];
    var above = [];
    nodes().forEach(function (other) {
      var ids = nodeIds(other);
      if (other === g || !ids || !ids.some(function (id) { return onPath.indexOf(id) >= 0; })) return;
      var o = at(other);
      if (o.t < box.t) above.push(o);
    });
    above.sort(function (a, b) { return b.t - a.t; }); // nearest first
    for (var i = 0; i < above.length; i++) {
      var o = above[i];
      var l = Math.min(box.l, o.l), r = Math.max(box.r, o.r), t = Math.min(box.t, o.t), b = Math.max(box.b, o.b);
      if (r - l > room || b - t > tall) break;
      box = { l: l, r: r, t: t, b: b };
    }
    tree.scrollLeft = box.r + pad <= tree.clientWidth ? 0 : Math.max(0, box.l - pad);
    tree.scrollTop = box.b + pad <= tree.clientHeight ? 0 : Math.max(0, box.t - pad);
  }
  // the splitter between the tree and the transcript: drag it to give the tree more room
  var split = document.getElementById("split"), main = split && split.parentElement;
  if (split && main) {
    split.addEventListener("pointerdown", function (ev) {
      ev.preventDefault();
      split.setPointerCapture(ev.pointerId);
      function move(e) {
        var box = main.getBoundingClientRect();
        var px = Math.max(200, Math.min(box.width - 260, e.clientX - box.left));
        main.style.setProperty("--side", px + "px");
        size();
      }
      function up() {
        split.removeEventListener("pointermove", move);
        split.removeEventListener("pointerup", up);
      }
      split.addEventListener("pointermove", move);
      split.addEventListener("pointerup", up);
    });
  }
  // at first the tree pane takes the width the readable tree needs, up to 55% of the page
  if (svg && main && svg.width && svg.width.baseVal && svg.width.baseVal.value) {
    var w0 = svg.width.baseVal.value, needed = w0 * Math.min(1, minScale(w0)) + 32;
    var widest = main.getBoundingClientRect().width * 0.55;
    if (needed > tree.clientWidth) main.style.setProperty("--side", Math.min(needed, widest) + "px");
  }
  if (fit && svg) {
    fit.addEventListener("click", function () {
      whole = !whole;
      fit.textContent = whole ? "readable size" : "whole tree";
      size();
      var sel = tree.querySelector("g.node.sel");
      if (sel) reveal(sel);
    });
    window.addEventListener("resize", size);
  } else if (fit) {
    fit.hidden = true;
  }
  size();

  // ---------------------------------------------------------------- search
  var box = document.getElementById("search");
  var count = document.getElementById("search-count");
  var prevBtn = document.getElementById("search-prev");
  var nextBtn = document.getElementById("search-next");
  var hits = document.getElementById("hits");
  var hitsBox = document.getElementById("hits-box");
  var MAX_MARKS = 5000; // a very common word stops being marked here (the count says so)
  var targets = []; // <mark> elements (or an entry whose match spans markup), in page order
  var links = []; // the match list's link per target (shared by the targets of one entry)
  var at = -1;
  var timer = null;

  function escapeRe(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  function clearMarks() {
    pane.querySelectorAll("mark.pi-hit").forEach(function (m) {
      var parent = m.parentNode;
      parent.replaceChild(document.createTextNode(m.textContent), m);
      parent.normalize();
    });
    pane.querySelectorAll(".entry.pi-cur").forEach(function (e) { e.classList.remove("pi-cur"); });
    nodes().forEach(function (g) { g.classList.remove("hit-node"); });
  }

  function markIn(entry, re, room) {
    var found = [], texts = [];
    var walk = document.createTreeWalker(entry, NodeFilter.SHOW_TEXT, null);
    for (var n = walk.nextNode(); n; n = walk.nextNode()) texts.push(n);
    for (var i = 0; i < texts.length && found.length < room; i++) {
      var node = texts[i], text = node.nodeValue, m, pieces = [];
      re.lastIndex = 0;
      while ((m = re.exec(text)) !== null && found.length + pieces.length < room) {
        pieces.push([m.index, m.index + m[0].length]);
      }
      if (!pieces.length) continue;
      var frag = document.createDocumentFragment(), pos = 0;
      pieces.forEach(function (p) {
        if (p[0] > pos) frag.appendChild(document.createTextNode(text.slice(pos, p[0])));
        var mark = document.createElement("mark");
        mark.className = "pi-hit";
        mark.textContent = text.slice(p[0], p[1]);
        frag.appendChild(mark);
        found.push(mark);
        pos = p[1];
      });
      if (pos < text.length) frag.appendChild(document.createTextNode(text.slice(pos)));
      node.parentNode.replaceChild(frag, node);
    }
    return found;
  }

  function snippet(entry, re) {
    var text = entry.textContent.slice((entry.dataset.id || "").length).replace(/\s+/g, " ").trim();
    re.lastIndex = 0;
    var m = re.exec(text), from = m ? Math.max(0, m.index - 30) : 0;
    return (from ? "…" : "") + text.slice(from, from + 80);
  }

  function run() {
    clearMarks();
    targets = [];
    links = [];
    at = -1;
    hits.textContent = "";
    var q = box.value.trim();
    box.dataset.ran = q;
    document.body.classList.toggle("searching", !!q);
    if (!q) { hitsBox.hidden = true; update(); return; }
    var re = new RegExp(escapeRe(q), "gi");
    pane.querySelectorAll(".entry").forEach(function (entry) {
      re.lastIndex = 0;
      if (!re.test(entry.textContent)) return;
      var a = document.createElement("a");
      a.href = "#" + entry.id;
      var id = document.createElement("code");
      id.textContent = entry.dataset.id;
      a.append(id, document.createTextNode(" " + snippet(entry, re)));
      var first = targets.length;
      a.addEventListener("click", function (ev) { ev.preventDefault(); go(first); });
      hits.appendChild(a);
      var room = MAX_MARKS - targets.length;
      var found = room > 0 ? markIn(entry, re, room) : [];
      if (!found.length) found = [entry]; // the match spans markup: the entry is the target
      found.forEach(function (t) { targets.push(t); links.push(a); });
    });
    hitsBox.hidden = false;
    if (targets.length) go(0);
    else update();
  }

  function go(i) {
    if (!targets.length) return;
    var old = targets[at];
    if (old) old.classList.remove("pi-cur");
    if (links[at]) links[at].classList.remove("cur");
    at = ((i % targets.length) + targets.length) % targets.length;
    var t = targets[at];
    var entry = t.classList.contains("entry") ? t : t.closest(".entry");
    var leaf = leafOf(entry.dataset.id);
    if (leaf !== shown || !entry.classList.contains("on")) show(leaf, false);
    for (var d = t.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
    t.classList.add("pi-cur");
    links[at].classList.add("cur");
    if (links[at].scrollIntoView) links[at].scrollIntoView({ block: "nearest" });
    nodes().forEach(function (g) {
      var ids = nodeIds(g), on = !!ids && ids.indexOf(entry.dataset.id) >= 0;
      g.classList.toggle("hit-node", on);
      if (on && g.scrollIntoView) g.scrollIntoView({ block: "nearest", inline: "nearest" });
    });
    t.scrollIntoView({ block: "center", inline: "nearest" });
    update();
  }

  function update() {
    var q = box.value.trim(), n = targets.length;
    count.textContent = !q ? "" : !n ? "no match" : (at + 1) + " of " + n + (n >= MAX_MARKS ? "+" : "");
    prevBtn.disabled = nextBtn.disabled = n < 2;
  }

  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(run, 120);
  });
  box.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter") {
      ev.preventDefault();
      clearTimeout(timer);
      if (box.value.trim() !== box.dataset.ran) run();
      else go(at + (ev.shiftKey ? -1 : 1));
    } else if (ev.key === "Escape") {
      box.value = "";
      run();
    }
  });
  prevBtn.addEventListener("click", function () { go(at - 1); });
  nextBtn.addEventListener("click", function () { go(at + 1); });

  show(D.leaf);
  update();
})();
