// The class view's clicks: a cell of the table opens that cell's answers with the student's
// marked, a student's name opens their tree. Without this script the links still jump to the
// folded answers and trees, which a click on their summary opens.
(function () {
  var script = document.currentScript;
  var root = script && script.closest(".pi-class");
  if (!root || root.dataset.wired) return;
  root.dataset.wired = "1";
  function byId(id) {
    return root.querySelector('[id="' + id.replace(/["\\]/g, "") + '"]');
  }
  root.addEventListener("click", function (ev) {
    var a = ev.target.closest && ev.target.closest('a[href^="#pic-"]');
    if (!a || !root.contains(a)) return;
    var target = byId(a.getAttribute("href").slice(1));
    if (!target) return;
    ev.preventDefault();
    if (target.tagName === "DETAILS") target.open = true;
    root.querySelectorAll(".pic-hl").forEach(function (c) {
      c.classList.remove("pic-hl");
    });
    var card = a.dataset.card ? byId(a.dataset.card) : null;
    if (card) card.classList.add("pic-hl");
    target.scrollIntoView({ block: "start", behavior: "auto" });
    if (card) card.scrollIntoView({ block: "nearest", behavior: "auto" });
  });
})();
