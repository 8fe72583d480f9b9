// rankgate label: the keys and the writes of the labelling page. No library, no outside request: the page's
// Content-Security-Policy allows this file, the stylesheet and requests to this server only. Every write carries the
// session token in a header (X-Rankgate-Token), read from the page's meta tag.
(function () {
  "use strict";
  var meta = function (name) { var m = document.querySelector('meta[name="' + name + '"]'); return m ? m.content : ""; };
  var token = meta("rg-token"), mode = meta("rg-mode");
  var main = document.getElementById("main"), status = document.getElementById("status");
  var help = document.getElementById("help");
  var busy = false, pending = {};

  function say(text, bad) { status.textContent = text || ""; status.className = bad ? "bad" : ""; }

  function post(url, body) {
    return fetch(url, {method: "POST", credentials: "same-origin",
                       headers: {"Content-Type": "application/json", "X-Rankgate-Token": token},
                       body: JSON.stringify(body)})
      .then(function (r) {
        return r.json().catch(function () { return {}; }).then(function (data) {
          if (!r.ok) { throw new Error(data.error || ("HTTP " + r.status)); }
          return data;
        });
      });
  }

  function card() { return main.querySelector("article.card"); }
  function noteText() { var n = document.getElementById("note"); return n ? n.value : ""; }

  function send(url, body) {
    if (busy) { return Promise.resolve(); }
    busy = true;
    return post(url, body).then(function (data) {
      if (data.html !== undefined) { main.innerHTML = data.html; pending = {}; }
      say(data.said || "");
      document.body.dataset.saved = String(Number(document.body.dataset.saved || 0) + 1);
    }).catch(function (e) { say("not saved: " + e.message, true); })
      .then(function () { busy = false; });
  }

  function grade(g) {
    var c = card();
    if (!c) { return; }
    if (c.dataset.kind === "answer") { verdict(g); return; }
    if (!c.querySelector('[data-grade="' + g + '"]')) { return; }
    send("/api/grade", {pos: Number(c.dataset.pos), grade: g, note: noteText()});
  }

  function verdict(v) {
    var c = card(), rows = Array.prototype.slice.call(c.querySelectorAll(".verdict"));
    var open = rows.filter(function (r) { return !(r.dataset.verdict in pending); })[0];
    if (!open) { return; }
    var button = open.querySelector('[data-v="' + v + '"]');
    if (!button) { return; }
    pending[open.dataset.verdict] = v;
    open.classList.add("given");
    button.classList.add("chosen");
    if (rows.every(function (r) { return r.dataset.verdict in pending; })) {
      var f = pending.faithful, k = pending.correct;
      send("/api/grade", {pos: Number(c.dataset.pos), faithful: f === 2 ? null : f === 1,
                          correct: (k === undefined || k === 2) ? null : k === 1, note: noteText()});
    }
  }

  function focusedItem() {
    var a = document.activeElement;
    return a && a.closest ? a.closest("li.item") : null;
  }

  function browseGrade(g, item) {
    item = item || focusedItem();
    if (!item) { say("focus an item first (click it, or j / k)", true); return; }
    if (!item.querySelector('[data-grade="' + g + '"]')) { return; }
    if (busy) { return; }
    busy = true;
    var q = item.dataset.queryId, id = item.dataset.id;
    post("/api/browse-grade", {query_id: q, id: id, grade: g, note: noteText()}).then(function (data) {
      document.querySelectorAll("li.item").forEach(function (li) {
        if (li.dataset.queryId !== q || li.dataset.id !== id) { return; }
        var head = li.querySelector(".head"), mine = head.querySelector(".mine");
        if (!mine) { mine = document.createElement("span"); mine.className = "mine"; head.appendChild(mine); }
        mine.textContent = "your label " + data.mine;
      });
      say(data.said || "saved");
      document.body.dataset.saved = String(Number(document.body.dataset.saved || 0) + 1);
    }).catch(function (e) { say("not saved: " + e.message, true); })
      .then(function () { busy = false; });
  }

  function move(step) {
    var items = Array.prototype.slice.call(document.querySelectorAll("li.item"));
    if (!items.length) { return; }
    var at = items.indexOf(focusedItem());
    var next = items[Math.max(0, Math.min(items.length - 1, at < 0 ? 0 : at + step))];
    next.focus();
  }

  document.addEventListener("keydown", function (e) {
    var tag = e.target && e.target.tagName;
    if (tag === "TEXTAREA" || tag === "INPUT" || tag === "SELECT") {
      if (e.key === "Escape") { e.target.blur(); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) { return; }
    if (/^[0-9]$/.test(e.key)) {
      e.preventDefault();
      if (mode === "browse") { browseGrade(Number(e.key)); } else if (mode === "card") { grade(Number(e.key)); }
    } else if (e.key === "s" && mode === "card") {
      var c = card();
      if (c) { e.preventDefault(); send("/api/skip", {pos: Number(c.dataset.pos)}); }
    } else if (e.key === "u" && mode !== "name") {
      e.preventDefault();
      if (mode === "browse") { post("/api/undo", {}).then(function () { location.reload(); }); }
      else { send("/api/undo", {}); }
    } else if (e.key === "n") {
      var n = document.getElementById("note");
      if (n) { e.preventDefault(); n.focus(); }
    } else if (e.key === "?") {
      help.hidden = !help.hidden;
    } else if ((e.key === "j" || e.key === "k") && mode === "browse") {
      e.preventDefault();
      move(e.key === "j" ? 1 : -1);
    } else if (e.key === "Escape") {
      help.hidden = true;
    }
  });

  document.addEventListener("click", function (e) {
    var t = e.target.closest ? e.target.closest("button") : null;
    if (!t) {
      var li = e.target.closest ? e.target.closest("li.item") : null;
      if (li) { li.focus(); }
      return;
    }
    if (t.dataset.grade !== undefined) {
      if (mode === "browse") { browseGrade(Number(t.dataset.grade), t.closest("li.item")); }
      else { grade(Number(t.dataset.grade)); }
    } else if (t.dataset.v !== undefined) {
      verdict(Number(t.dataset.v));
    } else if (t.id === "skip") {
      var c = card();
      if (c) { send("/api/skip", {pos: Number(c.dataset.pos)}); }
    } else if (t.id === "undo") {
      send("/api/undo", {});
    }
  });

  document.addEventListener("submit", function (e) {
    if (e.target.id !== "name-form") { return; }
    e.preventDefault();
    var name = document.getElementById("annotator").value;
    post("/api/annotator", {name: name}).then(function () { location.reload(); })
      .catch(function (err) { say(err.message, true); });
  });
}());
