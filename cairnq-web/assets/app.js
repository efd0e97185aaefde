// cairnq dashboard: live updates. The server sends a "change" event over
// server-sent events whenever the queues may have changed; a live page then
// re-reads its own content (the same URL, content only) and swaps it in.
// Paused while the tab is hidden; no refresh while the user is selecting
// tasks or typing in a filter.
(function () {
  "use strict";
  const base = document.body.dataset.base || "";
  const main = document.getElementById("main");
  const badge = document.getElementById("live");
  let source = null;
  let inflight = false;
  let again = false;
  let shown = null;

  function live() {
    return main !== null && main.dataset.live === "on";
  }

  // Not while the user is about to press a button, typing in a field, or
  // has tasks selected: a swap would eat the click, the text, the selection.
  function busy() {
    const focused = document.activeElement;
    const typing = focused !== null && main.contains(focused) && focused.tagName === "INPUT";
    return typing || main.querySelector("input[type=checkbox]:checked, button:hover, button:active") !== null;
  }

  async function refresh() {
    if (!live() || document.hidden || busy()) return;
    if (inflight) {
      again = true;
      return;
    }
    inflight = true;
    try {
      const response = await fetch(location.href, { headers: { "X-Cairnq-Partial": "1" }, credentials: "same-origin" });
      const html = response.ok ? await response.text() : null;
      if (html !== null && html !== shown) {
        shown = html;
        main.innerHTML = html;
        wire();
      }
    } catch (_) {
      // The next change event tries again.
    }
    inflight = false;
    if (again) {
      again = false;
      refresh();
    }
  }

  function open() {
    if (source !== null || !live()) return;
    source = new EventSource(base + "/events");
    source.addEventListener("change", refresh);
    source.onopen = function () { badge.classList.add("on"); };
    source.onerror = function () { badge.classList.remove("on"); };
  }

  function close() {
    if (source === null) return;
    source.close();
    source = null;
    badge.classList.remove("on");
  }

  function wire() {
    const all = document.getElementById("select-all");
    if (all === null) return;
    all.addEventListener("change", function () {
      for (const box of main.querySelectorAll("input[name=id]")) box.checked = all.checked;
    });
  }

  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      close();
    } else {
      open();
      refresh();
    }
  });
  wire();
  if (!document.hidden) open();
})();
