// Buttons of a finished %%pi output: "forget this" on each message and "Copy" / "Insert as cell"
// on each code block of an answer (both shown on hover), "continue from this one" on each sibling answer. Runs where output scripts run (a trusted notebook); sanitizers remove it
// and nothing else is lost. While the kernel that wrote the output lives, the page bridge that
// its PageBridge widget registered (window.__piJupyter.bridges[session], matched by token) does
// the action; otherwise the %pi command is copied and shown, to run in a cell.
(function () {
  var s = document.currentScript, root = s && s.closest(".pi-static");
  if (!root || root.dataset.piActions) return;
  // only in a page a Jupyter server serves (JupyterLab, Notebook 7): an exported page has no kernel to act on
  if (!document.getElementById("jupyter-config-data")) return;
  root.dataset.piActions = "1";
  var session = root.dataset.piSession, token = root.dataset.piBridge;
  var WAIT_MS = 8000; // a late answer still replaces the note

  function bridge() {
    var g = window.__piJupyter, list = g && g.bridges && g.bridges[session];
    if (!list) return null;
    for (var i = list.length - 1; i >= 0; i--) {
      if (list[i].token === token && list[i].alive()) return list[i];
    }
    return null;
  }
  function note(after, text, ok) {
    var n = after.parentNode.querySelector(".pi-act-note");
    if (!n) {
      n = document.createElement("span");
      n.className = "pi-act-note";
      n.style.cssText = "margin-left:.6em;font-size:.9em;opacity:.85";
      after.parentNode.insertBefore(n, after.nextSibling);
    }
    n.textContent = text;
    n.dataset.ok = ok ? "1" : "0";
    return n;
  }
  function copy(btn, command) {
    var n = note(btn, "run it in a cell: " + command, false);
    try {
      if (navigator.clipboard) {
        navigator.clipboard.writeText(command).then(function () {
          if (n.textContent === "run it in a cell: " + command) n.textContent = "copied — run it in a cell: " + command;
        }, function () {});
      }
    } catch (e) { /* no clipboard: the note shows the command */ }
  }
  function run(btn, action, target, command, done) {
    var b = bridge();
    if (!b) return copy(btn, command);
    btn.disabled = true;
    note(btn, "…", true);
    var answered = false;
    // a kernel that is busy or gone may never answer: after a while, fall back to the command
    var late = setTimeout(function () {
      if (answered) return;
      btn.disabled = false;
      copy(btn, command);
    }, WAIT_MS);
    b.act(action, target).then(function (r) {
      answered = true;
      clearTimeout(late);
      btn.disabled = false;
      if (!r.ok && /kernel is gone|cannot be reached/.test(r.text)) return copy(btn, command);
      note(btn, r.text, r.ok);
      if (r.ok && done) done();
    });
  }
  function button(text, title) {
    var b = document.createElement("button");
    b.type = "button"; b.textContent = text; b.title = title;
    b.style.cssText = "font-size:.8em;margin-left:.5em;cursor:pointer";
    return b;
  }
  // the buttons stay out of the way: a message's "forget this" and a code block's buttons show
  // while the pointer is on it (or a button has focus); once per page
  if (!document.getElementById("pi-static-actions-css")) {
    var css = document.createElement("style");
    css.id = "pi-static-actions-css";
    css.textContent =
      ".pi-static .pi-entry,.pi-static [data-pi-entry]{position:relative}" +
      ".pi-static .pi-forget-bar:not(.pi-forgotten-note):not(:has(.pi-act-note)),.pi-static .pi-code-acts{" +
      "position:absolute;top:2px;right:2px;opacity:0;transition:opacity .15s}" +
      ".pi-static [data-pi-entry]:hover:not(:has([data-pi-entry]:hover))>.pi-forget-bar,.pi-static .pi-forget-bar:hover," +
      ".pi-static .pi-forget-bar:focus-within,.pi-static pre:hover>.pi-code-acts,.pi-static .pi-code-acts:focus-within{opacity:.9}";
    document.head.appendChild(css);
  }
  // "Copy" on every code block of an answer; "Insert as cell" on the code the agent wrote for the user
  // (marked data-pi-insert by the rendering), not on what it quotes of a tool's output
  [].forEach.call(root.querySelectorAll(".pi-assistant .pi-text pre"), function (pre) {
    var code = pre.textContent;
    pre.style.position = "relative";
    var acts = document.createElement("span");
    acts.className = "pi-code-acts";
    var copyBtn = button("Copy", "copy the code");
    acts.appendChild(copyBtn);
    var insertBtn = pre.hasAttribute("data-pi-insert") ? button("Insert as cell", "put this code in a new cell below this one") : null;
    if (insertBtn) acts.appendChild(insertBtn);
    pre.appendChild(acts);
    function say(btn, text, back) {
      btn.textContent = text;
      setTimeout(function () { btn.textContent = back; }, 1800);
    }
    function copied(btn, back, okText) {
      try {
        navigator.clipboard.writeText(code).then(function () { say(btn, okText, back); }, function () { say(btn, "copy it by hand", back); });
      } catch (e) { say(btn, "copy it by hand", back); }
    }
    copyBtn.addEventListener("click", function () { copied(copyBtn, "Copy", "Copied"); });
    if (insertBtn) insertBtn.addEventListener("click", function () {
      var b = bridge();
      if (b && b.insertCell && b.insertCell(root, code)) return say(insertBtn, "Inserted below", "Insert as cell");
      copied(insertBtn, "Insert as cell", "Copied: paste it in a new cell");
    });
  });
  // "forget this" on every message whose entry is written
  [].forEach.call(root.querySelectorAll("[data-pi-entry]"), function (m) {
    var id = m.dataset.piEntry;
    var bar = document.createElement("div");
    bar.className = "pi-forget-bar";
    bar.style.cssText = "text-align:right";
    var b = button("forget this", "drop this message from what the model is sent (the session file keeps it): %pi forget " + id);
    b.className = "pi-forget";
    bar.appendChild(b);
    m.appendChild(bar);
    b.addEventListener("click", function () {
      run(b, "forget", id, "%pi forget " + id, function () {
        m.classList.add("pi-forgotten");
        m.style.opacity = ".55";
        bar.className = "pi-forget-bar pi-forgotten-note";
        bar.textContent = "↑ not sent any more: forgotten from the context (the session file keeps it)";
      });
    });
  });
  // "continue from this one" next to every %pi checkout command of a sibling answer
  [].forEach.call(root.querySelectorAll("code.pi-sib-cmd"), function (c) {
    var id = c.textContent.replace(/^%pi checkout\s+/, "").trim();
    var b = button("continue from this one", "check out this answer: the cells below continue from it");
    b.className = "pi-continue";
    c.parentNode.insertBefore(b, c);
    var label = c.parentNode.querySelector(".pi-sib-label");
    if (label) label.style.display = "none"; // the button says it; the command stays as the fallback
    c.style.opacity = ".6";
    b.addEventListener("click", function () { run(b, "checkout", id, c.textContent.trim()); });
  });
})();
