// cairnq dashboard: live updates. The server sends a "change" event over
// server-sent events whenever the queues may have changed; a live page then
// re-reads its own content (the same URL, content only) and swaps it in.
// Paused while the tab is hidden. Rows never move under the user: while the
// pointer is over a table, tasks are selected, a field has the focus or a
// button is about to be pressed, changes are counted instead, shown as
// "N new updates — refresh", and applied when the user lets go (the
// pointer leaves the table, the selection is cleared) or clicks the hint.
(function () {
  "use strict";
  const base = document.body.dataset.base || "";
  const main = document.getElementById("main");
  const badge = document.getElementById("live");
  const hint = document.getElementById("updates");
  let source = null;
  let inflight = false;
  let again = false;
  let shown = null;
  // Change events held back while the user was on the rows.
  let pending = 0;
  // Whether the pointer is over a table of the page (tracked from pointer
  // events: a swapped table would not say so itself).
  let overRows = false;

  function live() {
    return main !== null && main.dataset.live === "on";
  }

  // Whether a swap now would move what the user is pointing at, eat a
  // click or the text being typed, or drop the selection.
  function holding() {
    const focused = document.activeElement;
    const typing = focused !== null && main.contains(focused) && focused.tagName === "INPUT" && focused.type !== "checkbox";
    return overRows || typing ||
      main.querySelector("input[type=checkbox]:checked, button:hover, button:active") !== null;
  }

  function showHint() {
    if (hint === null) return;
    hint.textContent = pending + (pending === 1 ? " new update" : " new updates") + " \u2014 refresh";
    hint.hidden = false;
  }

  function clearHint() {
    pending = 0;
    if (hint !== null) hint.hidden = true;
  }

  // A change event: apply it, or hold it while the user is on the rows.
  function changed() {
    if (!live() || document.hidden) return;
    if (holding()) {
      pending += 1;
      showHint();
      return;
    }
    refresh(false);
  }

  // The user let go: apply what was held back.
  function release() {
    if (pending > 0 && !holding()) refresh(false);
  }

  // Re-reads the page's content. `keepSelection`: the user asked for it
  // with tasks ticked; tick them again in the new rows.
  async function refresh(keepSelection) {
    if (inflight) {
      again = true;
      return;
    }
    inflight = true;
    const ticked = keepSelection
      ? Array.from(main.querySelectorAll("input[name=id]:checked"), function (box) { return box.value; })
      : [];
    try {
      const response = await fetch(location.href, { headers: { "X-Cairnq-Partial": "1" }, credentials: "same-origin" });
      const html = response.ok ? await response.text() : null;
      if (html !== null) {
        clearHint();
        if (html !== shown) {
          shown = html;
          main.innerHTML = html;
          for (const box of main.querySelectorAll("input[name=id]")) box.checked = ticked.includes(box.value);
          wire();
        }
      }
    } catch (_) {
      // The next change event tries again.
    }
    inflight = false;
    if (again) {
      again = false;
      changed();
    }
  }

  function open() {
    if (source !== null || !live()) return;
    source = new EventSource(base + "/events");
    source.addEventListener("change", changed);
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

  document.addEventListener("mouseover", function (event) {
    const over = event.target instanceof Element && event.target.closest("#main table") !== null;
    const left = overRows && !over;
    overRows = over;
    if (left) release();
  });
  document.documentElement.addEventListener("mouseleave", function () {
    overRows = false;
    release();
  });
  if (main !== null) {
    main.addEventListener("change", function (event) {
      if (event.target.type === "checkbox") release();
    });
    main.addEventListener("focusout", function () { setTimeout(release, 0); });
  }
  if (hint !== null) hint.addEventListener("click", function () { refresh(true); });
  document.addEventListener("visibilitychange", function () {
    if (document.hidden) {
      close();
    } else {
      open();
      changed();
    }
  });
  wire();
  if (!document.hidden) open();
})();
