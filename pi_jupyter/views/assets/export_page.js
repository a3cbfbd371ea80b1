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
    if (selected && selected.scrollIntoView) selected.scrollIntoView({ block: "nearest", inline: "center" });
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
  // that it cannot be read (then the pane scrolls, to the current node first); "whole tree" fits it all.
  var svg = tree.querySelector("svg");
  var fit = document.getElementById("tree-fit");
  var whole = false;
  var MIN_SCALE = 0.5;
  function size() {
    if (!svg || !svg.width || !svg.width.baseVal) return;
    var w = svg.width.baseVal.value, h = svg.height.baseVal.value;
    if (!w || !h) return;
    var k = Math.min(1, Math.max(50, tree.clientWidth - 16) / w);
    if (!whole) k = Math.max(k, MIN_SCALE);
    svg.style.width = w * k + "px";
    svg.style.height = h * k + "px";
  }
  if (fit && svg) {
    fit.addEventListener("click", function () {
      whole = !whole;
      fit.textContent = whole ? "readable size" : "whole tree";
      size();
      var sel = tree.querySelector("g.node.sel");
      if (sel && sel.scrollIntoView) sel.scrollIntoView({ block: "nearest", inline: "center" });
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
