// The exported page's player: plays the branch the page shows as it was recorded, with no
// kernel and no network. Prompts appear, answers stream over the time they took, tool cards
// appear and their results come in when the tools finished; gaps between turns longer than
// two seconds are shortened. Play, pause, step, a speed, and step mode (stop before each tool
// call and at each branch point, "Go on ▶" to continue). Times come from the session file
// (the data in #pi-play, see pi_jupyter/views/export/playback.py); entries without times play at a
// default pace and the bar says so. Every event is scheduled from one start time, so a late
// frame never delays the events after it. window.piPlayback is its interface for scripts.
(function () {
  "use strict";
  var dataEl = document.getElementById("pi-play");
  var pane = document.getElementById("transcript");
  if (!dataEl || !pane) return;
  var P = JSON.parse(dataEl.textContent);
  var T = P.times || {};
  var BP = P.branchPoints || {};
  var CPS = 200; // characters a second for an answer without times
  var GAP = 400; // ms before an entry without times
  var MAX_GAP = 2000; // the longest pause between recorded entries that is kept (people typing, lunch)
  var BLOCKS = /^(P|PRE|LI|UL|OL|H[1-6]|TABLE|BLOCKQUOTE|DETAILS|DIV)$/;

  var state = "idle";
  var speed = 1;
  var stepMode = false;
  var events = [];
  var next = 0;
  var total = 0;
  var untimed = 0;
  var pos = 0;
  var anchor = 0;
  var heldAt = 0;
  var active = [];
  var touched = [];
  var drift = [];
  var logging = false;
  var frame = 0;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  // ---------------------------------------------------------------- the bar

  var bar = el("div", "pb-bar");
  var playBtn = el("button", "pb-play", "▶ Play");
  var pauseBtn = el("button", "pb-pause", "❚❚ Pause");
  var stepBtn = el("button", "pb-step", "▶| Step");
  var speedSel = el("select", "pb-speed");
  [0.5, 1, 2, 4, 10, 50].forEach(function (s) {
    var o = el("option", null, s + "×");
    o.value = String(s);
    if (s === 1) o.selected = true;
    speedSel.appendChild(o);
  });
  var stepLabel = el("label", "pb-stepmode");
  var stepBox = el("input");
  stepBox.type = "checkbox";
  stepLabel.append(stepBox, " stop before tool calls and branch points");
  var clock = el("span", "pb-clock", "");
  var doneBtn = el("button", "pb-done", "Show all");
  var msg = el("div", "pb-msg");
  var msgText = el("span", "pb-msg-text");
  var goBtn = el("button", "pb-go", "Go on ▶");
  msg.append(msgText, goBtn);
  [playBtn, pauseBtn, stepBtn, doneBtn, goBtn].forEach(function (b) {
    b.type = "button";
  });
  speedSel.setAttribute("aria-label", "speed");
  bar.append(playBtn, pauseBtn, stepBtn, speedSel, stepLabel, clock, doneBtn, msg);
  pane.insertBefore(bar, pane.firstChild);

  function say(text, withGo) {
    msgText.textContent = text || "";
    msg.style.display = text ? "" : "none";
    goBtn.style.display = withGo ? "" : "none";
  }

  function fmt(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    var m = Math.floor(s / 60);
    return m + ":" + String(s % 60).padStart(2, "0");
  }

  function refresh() {
    bar.dataset.state = state;
    playBtn.disabled = state === "playing" || state === "held";
    pauseBtn.disabled = state !== "playing";
    doneBtn.style.display = state === "idle" ? "none" : "";
    clock.textContent = state === "idle" ? "" : fmt(pos) + " / " + fmt(total);
  }

  // ---------------------------------------------------------------- the timeline of the shown branch

  function shownBranch() {
    var on = pane.querySelectorAll(".entry.on");
    var leaf = on.length ? on[on.length - 1].dataset.id : null;
    var ids = [];
    var seen = {};
    while (leaf && T[leaf] && !seen[leaf]) {
      seen[leaf] = 1;
      ids.push(leaf);
      leaf = T[leaf][3];
    }
    return ids.reverse();
  }

  function build() {
    events = [];
    untimed = 0;
    var cursor = 0;
    var prevEnd = null;
    var cards = {};
    var scene = true; // the settings before the first prompt (model, thinking level, the system prompt) are not played
    shownBranch().forEach(function (id) {
      var info = T[id];
      var sec = document.getElementById("e-" + id);
      var kind = info[2];
      if (scene && kind === "s") return;
      scene = false;
      var card = kind === "r" ? cards[id] : null;
      if (!sec && !card) return; // nothing on the page to show (labels, cell records)
      var timed = info[0] != null && info[1] != null;
      var gap = prevEnd == null ? 0 : timed ? Math.min(MAX_GAP, Math.max(0, info[0] - prevEnd)) : GAP;
      if (!timed) untimed++;
      var t0 = cursor + gap;
      var dur = 0;
      if (kind === "a" && sec) dur = timed ? info[1] - info[0] : (sec.textContent.length / CPS) * 1000;
      var t1 = t0 + dur;
      if (BP[id] && sec) events.push({ t: t0, kind: "branch", others: BP[id] });
      if (kind === "a" && sec) {
        var found = sec.querySelectorAll("details.pi-tool");
        (info[4] || []).forEach(function (rid, k) {
          if (rid && found[k]) cards[rid] = found[k];
        });
        events.push({ t: t0, kind: "stream", sec: sec, t1: t1 });
      } else if (card) {
        events.push({ t: t0, kind: "result", card: card });
      } else {
        events.push({ t: t0, kind: "show", sec: sec });
      }
      cursor = t1;
      if (timed) prevEnd = info[1];
      else if (prevEnd != null) prevEnd += gap + dur;
    });
    total = cursor;
  }

  // ---------------------------------------------------------------- showing, hiding, streaming

  function hide(node) {
    node.classList.add("pb-future");
  }

  function reveal(node) {
    node.classList.remove("pb-future");
  }

  // the newest thing shown; the pane scrolls to it once per frame (one layout, however many events)
  var latest = null;

  function follow(node) {
    latest = node;
  }

  function scrollToLatest() {
    if (!latest) return;
    var r = latest.getBoundingClientRect();
    var p = pane.getBoundingClientRect();
    if (r.bottom > p.bottom) pane.scrollTop += r.bottom - p.bottom + 8;
    latest = null;
  }

  function resultPart(card) {
    // the card's children: summary, ["arguments", its block], [result or error label, its block]
    var kids = Array.prototype.slice.call(card.children, 1);
    var at = kids.findIndex(function (k) {
      return k.tagName === "DIV" && /^(result|error)$/.test(k.textContent.trim());
    });
    return at < 0 ? [] : kids.slice(at);
  }

  function Stream(ev) {
    var units = [];
    var weight = 0;
    function walk(node, blocks) {
      if (node.nodeType === 3) {
        if (!node.nodeValue) return;
        units.push({ node: node, full: node.nodeValue, at: weight, w: node.nodeValue.length, blocks: blocks });
        weight += node.nodeValue.length;
        node.nodeValue = "";
        return;
      }
      if (node.nodeType !== 1 || node.classList.contains("eid")) return;
      if (node.matches("details.pi-tool")) {
        var w = Math.max(20, node.textContent.length / 4);
        units.push({ card: node, at: weight, w: w, blocks: blocks });
        weight += w;
        hide(node);
        return;
      }
      var inner = blocks;
      if (BLOCKS.test(node.tagName)) {
        node.classList.add("pb-wait");
        inner = blocks.concat([node]);
      }
      for (var c = node.firstChild; c; c = c.nextSibling) walk(c, inner);
    }
    walk(ev.sec, []);
    this.ev = ev;
    this.units = units;
    this.weight = weight || 1;
    this.k = 0;
    touched.push(this);
  }

  Stream.prototype.apply = function (p, now) {
    var target = p * this.weight;
    while (this.k < this.units.length) {
      var u = this.units[this.k];
      if (target <= u.at && p < 1) return true;
      u.blocks.forEach(function (b) {
        b.classList.remove("pb-wait");
      });
      if (u.card) {
        if (stepMode && !u.passed) {
          u.passed = true;
          hold("The agent is about to call a tool. What will it do?");
          return false;
        }
        reveal(u.card);
        resultPart(u.card).forEach(hide);
        u.card.classList.add("pb-running");
        note(this.ev.t + (u.at / this.weight) * (this.ev.t1 - this.ev.t), now);
        follow(u.card);
        this.k++;
        continue;
      }
      var shown = Math.min(u.full.length, Math.ceil(target - u.at));
      u.node.nodeValue = u.full.slice(0, shown);
      if (shown < u.full.length) return true;
      this.k++;
    }
    if (p >= 1) {
      this.ev.sec.querySelectorAll(".pb-wait").forEach(function (b) {
        b.classList.remove("pb-wait");
      });
      return false;
    }
    return true;
  };

  Stream.prototype.restore = function () {
    this.units.forEach(function (u) {
      if (u.node) u.node.nodeValue = u.full;
      if (u.card) {
        reveal(u.card);
        u.card.classList.remove("pb-running");
        resultPart(u.card).forEach(reveal);
      }
    });
    this.ev.sec.querySelectorAll(".pb-wait").forEach(function (b) {
      b.classList.remove("pb-wait");
    });
  };

  function note(t, now) {
    if (logging) drift.push([anchor + t / speed, now]);
  }

  // ---------------------------------------------------------------- the clock

  function reset() {
    touched.forEach(function (s) {
      s.restore();
    });
    touched = [];
    active = [];
    pane.querySelectorAll(".pb-future").forEach(reveal);
    next = 0;
    pos = 0;
    events.forEach(function (ev) {
      ev.passed = false;
    });
  }

  function start(opts) {
    opts = opts || {};
    reset();
    build();
    if (opts.speed) setSpeed(+opts.speed);
    if (opts.stepMode != null) stepBox.checked = stepMode = !!opts.stepMode;
    logging = !!opts.log;
    drift = [];
    events.forEach(function (ev) {
      if (ev.sec) hide(ev.sec);
    });
    pane.scrollTop = 0;
    say(untimed ? untimed + " entries of this branch have no times in the session file: they play at a default pace" : "", false);
    state = "playing";
    pane.classList.add("pb-playing");
    anchor = performance.now();
    loop();
  }

  function setSpeed(s) {
    if (!(s > 0)) return;
    var now = performance.now();
    if (state === "playing") anchor = now - pos / s;
    speed = s;
    var known = Array.prototype.some.call(speedSel.options, function (o) {
      return +o.value === s;
    });
    if (!known) {
      var o = el("option", null, +s.toFixed(s < 10 ? 2 : 0) + "×");
      o.value = String(s);
      speedSel.appendChild(o);
    }
    speedSel.value = String(s);
  }

  function hold(text) {
    state = "held";
    heldAt = performance.now();
    say(text, true);
    refresh();
  }

  function go() {
    if (state !== "held") return;
    anchor += performance.now() - heldAt;
    say("", false);
    state = "playing";
    loop();
  }

  function loop() {
    refresh();
    if (!frame) frame = requestAnimationFrame(tick);
  }

  function apply(ev, now) {
    if (ev.kind === "show") {
      reveal(ev.sec);
      follow(ev.sec);
    } else if (ev.kind === "stream") {
      reveal(ev.sec);
      var s = new Stream(ev);
      active.push(s);
      follow(ev.sec);
    } else if (ev.kind === "result") {
      resultPart(ev.card).forEach(reveal);
      ev.card.classList.remove("pb-running");
    }
    if (ev.kind !== "branch") note(ev.t, now);
  }

  function advance(now) {
    while (next < events.length && events[next].t <= pos) {
      var ev = events[next];
      if (ev.kind === "branch") {
        next++;
        if (stepMode && !ev.passed) {
          ev.passed = true;
          var other = ev.others === 1 ? "another branch continues" : ev.others + " other branches continue";
          hold("A branch point: " + other + " from here. Which way will it go?");
          return false;
        }
        continue;
      }
      // a stream that must end before this event starts does so first (it may hold before a tool card)
      if (!runStreams(ev.t, now)) return false;
      apply(ev, now);
      next++;
    }
    return runStreams(pos, now);
  }

  function runStreams(at, now) {
    for (var i = 0; i < active.length; i++) {
      var s = active[i];
      var span = s.ev.t1 - s.ev.t;
      var p = span > 0 ? Math.min(1, (at - s.ev.t) / span) : 1;
      var more = s.apply(p, now);
      if (state === "held") return false;
      if (!more && p >= 1) {
        note(s.ev.t1, now);
        active.splice(i, 1);
        i--;
      }
    }
    return true;
  }

  function tick(now) {
    frame = 0;
    if (state !== "playing") return;
    pos = (now - anchor) * speed;
    var going = advance(now);
    scrollToLatest();
    if (!going) return;
    if (next >= events.length && !active.length) {
      pos = total;
      state = "ended";
      say(stepMode || untimed ? msgText.textContent : "", false);
      refresh();
      return;
    }
    refresh();
    frame = requestAnimationFrame(tick);
  }

  function pause() {
    if (state !== "playing") return;
    state = "paused";
    refresh();
  }

  function resume() {
    if (state === "paused") {
      anchor = performance.now() - pos / speed;
      state = "playing";
      loop();
    } else if (state === "held") {
      go();
    } else {
      start({});
    }
  }

  function step() {
    // one event at a time: finish what streams, then show the next entry, and wait
    if (state === "idle" || state === "ended") {
      start({});
      state = "paused";
    }
    if (state === "held") {
      go();
      state = "paused";
    }
    var now = performance.now();
    var target = next < events.length ? events[next].t : total;
    pos = Math.max(pos, target);
    state = "stepping";
    advance(now);
    scrollToLatest();
    if (state !== "held") state = next >= events.length && !active.length ? "ended" : "paused";
    refresh();
  }

  function stop() {
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
    reset();
    pane.classList.remove("pb-playing");
    state = "idle";
    say("", false);
    refresh();
  }

  playBtn.addEventListener("click", resume);
  pauseBtn.addEventListener("click", pause);
  stepBtn.addEventListener("click", step);
  goBtn.addEventListener("click", go);
  doneBtn.addEventListener("click", stop);
  speedSel.addEventListener("change", function () {
    setSpeed(+speedSel.value);
  });
  stepBox.addEventListener("change", function () {
    stepMode = stepBox.checked;
  });
  // another branch, a search hit: the page shows something else, so the performance ends
  document.addEventListener(
    "click",
    function (ev) {
      var t = ev.target;
      if (t && t.closest && t.closest("#tree g.node, a[data-leaf], #hits a")) stop();
    },
    true,
  );
  document.getElementById("search") &&
    document.getElementById("search").addEventListener("input", function () {
      if (state !== "idle") stop();
    });
  say("", false);
  refresh();

  window.piPlayback = {
    play: start,
    pause: pause,
    resume: resume,
    step: step,
    go: go,
    stop: stop,
    speed: setSpeed,
    state: function () {
      return state;
    },
    position: function () {
      return pos;
    },
    length: function () {
      build();
      return total;
    },
    log: function () {
      return drift.slice();
    },
  };
})();
