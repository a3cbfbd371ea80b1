// Pages through the answers of a re-run cell with ‹ ›, in place: the other run's whole turn (its
// prompt, thinking, tool cards with what they changed, answer and status line) takes the place of
// this run's turn in the conversation above, as a chat app swaps its answers. Runs where output
// scripts run (a trusted notebook, an nbconvert page); sanitizers remove it and the other runs
// stay readable, each whole, folded below the conversation.
(function () {
  var s = document.currentScript, box = s && s.parentElement;
  if (!box || box.dataset.paged) return;
  box.dataset.paged = "1";
  var cur = +box.dataset.current, total = +box.dataset.total, k = cur;
  var head = box.querySelector(".pi-sib-head"), label = head.querySelector("strong");
  var sibs = [].slice.call(box.querySelectorAll("details.pi-sib"));
  function has(n) {
    return n === cur || sibs.some(function (d) { return +d.dataset.n === n; });
  }
  // this run's turn: the block of the conversation outside this box (older outputs: its last answer)
  var root = box.closest(".pi-static") || box.parentElement;
  var mine = [].filter.call(root.querySelectorAll(".pi-turn"), function (t) { return !box.contains(t); })[0] || null;
  if (!mine) {
    var answers = [].filter.call(root.querySelectorAll(".pi-assistant"), function (a) { return !box.contains(a); });
    mine = answers.length ? answers[answers.length - 1] : null;
    if (mine && mine.parentElement && /pi-entry/.test(mine.parentElement.className)) mine = mine.parentElement;
  }
  var slot = null, shown = null;
  if (mine) {
    slot = document.createElement("div");
    slot.className = "pi-sib-swap";
    mine.parentNode.insertBefore(slot, mine.nextSibling);
    // the folded list gives way to the swap; the words after "answer k of N" with it
    sibs.forEach(function (d) { d.style.display = "none"; });
    if (label.nextSibling && label.nextSibling.nodeType === 3) label.nextSibling.textContent = " ";
  }
  var here = box.querySelector(".pi-sib-cur");
  // move a run's body (not its summary) between its folded <details> and the swap slot
  function putBack() {
    if (!shown) return;
    while (slot.firstChild) shown.appendChild(slot.firstChild);
    shown = null;
  }
  function show() {
    label.textContent = "answer " + k + " of " + total;
    if (here) here.style.display = k === cur ? "" : "none";
    if (slot) {
      putBack();
      var d = sibs.filter(function (x) { return +x.dataset.n === k; })[0];
      mine.style.display = d ? "none" : "";
      if (d) {
        [].slice.call(d.childNodes).forEach(function (c) { if (c.tagName !== "SUMMARY") slot.appendChild(c); });
        shown = d;
      }
    } else {
      sibs.forEach(function (d) {
        var on = +d.dataset.n === k;
        d.style.display = k === cur || on ? "" : "none";
        d.open = on;
      });
    }
    prev.disabled = !has(k - 1);
    next.disabled = !has(k + 1);
  }
  function step(dk) {
    var n = k + dk;
    while (n >= 1 && n <= total && !has(n)) n += dk;
    if (n >= 1 && n <= total) { k = n; show(); }
  }
  function btn(text, dk, title) {
    var b = document.createElement("button");
    b.type = "button"; b.textContent = text; b.title = title; b.className = "pi-sib-nav";
    b.addEventListener("click", function () { step(dk); });
    return b;
  }
  var prev = btn("\u2039", -1, "the answer before"), next = btn("\u203a", 1, "the answer after");
  head.insertBefore(prev, head.firstChild);
  head.insertBefore(next, label.nextSibling);
  box.querySelectorAll("code.pi-sib-cmd").forEach(function (c) {
    c.title = "click to copy"; c.style.cursor = "copy";
    c.addEventListener("click", function () { if (navigator.clipboard) navigator.clipboard.writeText(c.textContent); });
  });
  show();
})();
