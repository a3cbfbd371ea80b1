// Pages through the folded other answers of a re-run cell with ‹ › (the current answer is the
// conversation above). Runs where output scripts run (a trusted notebook, an nbconvert page);
// sanitizers remove it and the folded answers stay readable.
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
  var here = box.querySelector(".pi-sib-cur");
  function show() {
    label.textContent = "answer " + k + " of " + total;
    if (here) here.style.display = k === cur ? "" : "none";
    sibs.forEach(function (d) {
      var on = +d.dataset.n === k;
      d.style.display = k === cur || on ? "" : "none";
      d.open = on;
    });
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
