// The review pages: the keyboard contract and the packet workspace. Loaded as a file (no inline
// script anywhere), so a strict Content-Security-Policy can forbid inline code.
//
// Keys (ignored while typing in a field):
//   V validate · C correct, then 1-5 type (Clinical Note, Pathology Report, Genomic Report,
//   Radiology Report, Other) and Enter to save · Esc leaves correcting · R puts the machine's
//   answer back in the panel · B a new document starts on the page in view · S skip · U undo
//   your last decision · N next · J / K next / previous issue · + / - zoom the page images ·
//   on an adjudication, 1 / 2 (when not correcting) take the first / second answer.
//
// A decision records exactly what the panel shows: #will-record says it, from the panel's
// rows, at every change (data-action: validate, correct or record; data-segments: the
// [first, last, type] rows). V is refused while the panel shows a correction.
(function () {
  "use strict";

  var TYPES = ["clinical_note", "pathology", "genomic", "radiology", "other"];
  var NAMES = {clinical_note: "Clinical Note", pathology: "Pathology Report",
    genomic: "Genomic Report", radiology: "Radiology Report", other: "Other"};
  var ZOOMS = [50, 75, 100, 125, 150, 200, 300];

  function one(selector, root) { return (root || document).querySelector(selector); }
  function all(selector, root) {
    return Array.prototype.slice.call((root || document).querySelectorAll(selector));
  }
  function typing(target) {
    return target && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName));
  }
  function press(button) {
    if (!button || button.disabled) return false;
    var form = button.form;
    if (form) form.requestSubmit(button); else button.click();
    return true;
  }
  function shown(element) { return element.getClientRects().length > 0; }

  var workspace = one("[data-workspace]");
  var form = one("#decision-form");
  var pages = one("#pages");
  var viewer = one("[data-viewer]");
  var current = -1;
  var correcting = false;
  var zoom = 100;

  // -- the issue list drives the viewer ---------------------------------------------------------

  function items() { return all("[data-item]"); }

  function gotoPage(number) {
    var page = document.getElementById("page-" + number);
    if (page) page.scrollIntoView({block: "start"});
  }

  function select(index) {
    var list = items();
    if (!list.length) return;
    current = Math.max(0, Math.min(list.length - 1, index));
    list.forEach(function (el) { el.classList.remove("current"); });
    var item = list[current];
    item.classList.add("current");
    item.focus({preventScroll: true});
    item.scrollIntoView({block: "nearest"});
    if (!pages) return;
    all(".mark.current", pages).forEach(function (m) { m.classList.remove("current"); });
    var first = null;
    (item.dataset.evidence || "").split(" ").filter(Boolean).forEach(function (id) {
      all('[data-evidence="' + id + '"]', pages).forEach(function (mark) {
        mark.classList.add("current");
        if (!first && shown(mark)) first = mark;
      });
    });
    if (first) first.scrollIntoView({block: "center", inline: "nearest"});
    else if (item.dataset.page) gotoPage(item.dataset.page);
  }

  items().forEach(function (item, index) {
    item.addEventListener("click", function (event) {
      if (event.target.closest("a, summary, button")) return;
      select(index);
    });
  });

  // -- viewer: pages or text, zoom --------------------------------------------------------------

  function setZoom(next) {
    if (!pages) return;
    pages.classList.remove("zoom-" + zoom);
    zoom = next;
    pages.classList.add("zoom-" + zoom);
    var level = one("#zoom-level");
    if (level) level.textContent = zoom + "%";
  }
  function stepZoom(step) {
    var at = ZOOMS.indexOf(zoom);
    setZoom(step === 0 ? 100 : ZOOMS[Math.max(0, Math.min(ZOOMS.length - 1, at + step))]);
  }
  all("[data-zoom]").forEach(function (button) {
    button.addEventListener("click", function () { stepZoom(parseInt(button.dataset.zoom, 10)); });
  });
  all("[data-view]").forEach(function (button) {
    button.addEventListener("click", function () {
      var text = button.dataset.view === "text";
      viewer.classList.toggle("view-text", text);
      all("[data-view]").forEach(function (b) { b.setAttribute("aria-pressed", String(b === button)); });
      if (current >= 0) select(current);
    });
  });

  // -- correcting: segments, type keys, shares, preview -----------------------------------------

  var pageCount = form ? parseInt(form.dataset.pageCount, 10) : 0;

  function rows() { return all("[data-row]", form); }
  function activeRow() { return one(".segment-row.active", form) || rows()[0]; }
  function activate(row) {
    rows().forEach(function (r) { r.classList.toggle("active", r === row); });
    refreshKeys();
  }
  function startOf(row) { return parseInt(one(".seg-start", row).value, 10) || 0; }

  function refreshKeys() {
    var row = activeRow();
    var type = row ? one(".seg-type", row).value : "";
    all(".type-key", form).forEach(function (key) {
      key.setAttribute("aria-pressed", String(key.dataset.type === type));
    });
  }

  function changed() {
    var list = rows().sort(function (a, b) { return startOf(a) - startOf(b); });
    var holder = one("#segment-rows");
    var pagesOf = {};
    list.forEach(function (row, index) {
      holder.appendChild(row);
      var next = list[index + 1];
      var end = next ? startOf(next) - 1 : pageCount;
      one(".seg-end", row).textContent = "–" + end;
      one(".seg-range .sr-only", row).textContent = "Segment " + (index + 1) + " starts on page";
      one(".seg-type", row).setAttribute("aria-label", "Segment " + (index + 1) + " type");
      var type = one(".seg-type", row).value;
      pagesOf[type] = (pagesOf[type] || 0) + Math.max(0, end - startOf(row) + 1);
    });
    TYPES.forEach(function (type) {
      var input = form.elements["share_" + type];
      if (input) input.placeholder = ((pagesOf[type] || 0) / (pageCount || 1)).toFixed(2);
    });
    refreshKeys();
    summarise();
    form.dispatchEvent(new CustomEvent("correction-changed", {bubbles: true}));
  }

  // What saving would record, said at once from the panel's rows (the server's preview adds
  // the reason and the fields a moment later).
  function panelSegments() {
    var list = rows().sort(function (a, b) { return startOf(a) - startOf(b); });
    return list.map(function (row, index) {
      var next = list[index + 1];
      return [startOf(row), next ? startOf(next) - 1 : pageCount, one(".seg-type", row).value];
    });
  }
  function words(segments) {
    if (segments.length === 1) return NAMES[segments[0][2]] || segments[0][2];
    return segments.map(function (s) {
      return (s[0] === s[1] ? "page " + s[0] : "pages " + s[0] + "\u2013" + s[1]) + " " +
        (NAMES[s[2]] || s[2]);
    }).join("; ");
  }
  var machine = form && form.dataset.machine ? JSON.parse(form.dataset.machine) : null;
  function mixtureEdited() {
    // Shares typed, a dominant type chosen, a missed type marked: the panel corrects the
    // mixture even when its segments are the machine's.
    return all("input[name^='share_']", form).some(function (i) { return i.value.trim() !== ""; }) ||
      all("select[name='dominant_type']", form).some(function (s) { return s.value !== ""; }) ||
      all("input[name='present']", form).some(function (i) { return i.checked; });
  }
  function shows(segments) {
    if (segments.some(function (s) { return !s[2] || !s[0]; })) return "";
    if (!machine) return "record";
    var same = JSON.stringify(segments) === JSON.stringify(machine);
    return same && !mixtureEdited() ? "validate" : "correct";
  }
  function summarise() {
    var out = one("#will-record");
    if (!out) return;
    var segments = panelSegments();
    var action = shows(segments);
    out.dataset.action = action;
    out.dataset.segments = JSON.stringify(segments);
    if (!action) out.textContent = "Choose a type for every document.";
    else if (action === "validate") out.textContent = "V records: " + words(segments) + ", validated (the machine's answer).";
    else if (action === "correct") out.textContent = "Enter records: " + words(segments) + ", corrected by you.";
    else out.textContent = "Enter records: " + words(segments) + ".";
  }
  function say(text) {
    var status = one("#packet-status") || one("#check-status");
    if (!status) return;
    status.className = "message error";
    status.setAttribute("role", "alert");
    status.textContent = text;
  }
  function restoreMachine() {
    if (!machine || !form) return;
    rows().forEach(function (row) { row.remove(); });
    machine.forEach(function (s, index) {
      var row = one("#segment-row-template").content.firstElementChild.cloneNode(true);
      one(".seg-start", row).value = s[0];
      one(".seg-type", row).value = s[2];
      if (index === 0) {
        one(".seg-start", row).readOnly = true;
        var remove = one(".seg-remove", row);
        if (remove) remove.remove();
      }
      one("#segment-rows").appendChild(row);
    });
    activate(rows()[0]);
    changed();
  }
  function take(pairs) {
    rows().forEach(function (row) { row.remove(); });
    pairs.forEach(function (pair, index) {
      var row = one("#segment-row-template").content.firstElementChild.cloneNode(true);
      one(".seg-start", row).value = pair[0];
      one(".seg-type", row).value = pair[1];
      if (index === 0) {
        one(".seg-start", row).readOnly = true;
        var remove = one(".seg-remove", row);
        if (remove) remove.remove();
      }
      one("#segment-rows").appendChild(row);
    });
    activate(rows()[0]);
    changed();
    startCorrecting();  // Enter records what was taken
  }
  function pageInView() {
    if (!pages) return 0;
    var top = pages.getBoundingClientRect().top;
    var best = 0;
    all(".page", pages).forEach(function (page) {
      if (page.getBoundingClientRect().top - top <= 40) best = parseInt(page.dataset.page, 10);
    });
    return best || 1;
  }

  function startCorrecting() {
    if (!form || form.querySelector("fieldset:disabled")) return false;
    correcting = true;
    workspace.classList.add("correcting");
    one("#type-picker").focus();
    return true;
  }
  function stopCorrecting() {
    correcting = false;
    if (workspace) workspace.classList.remove("correcting");
  }
  function setType(type) {
    var row = activeRow();
    if (!row) return;
    one(".seg-type", row).value = type;
    changed();
  }

  function split(page) {
    if (!form || form.querySelector("fieldset:disabled")) return;
    var row = rows().filter(function (r) { return startOf(r) === page; })[0];
    if (!row) {
      var containing = rows().filter(function (r) { return startOf(r) <= page; }).pop();
      row = one("#segment-row-template").content.firstElementChild.cloneNode(true);
      one(".seg-start", row).value = page;
      if (containing) one(".seg-type", row).value = one(".seg-type", containing).value;
      one("#segment-rows").appendChild(row);
    }
    activate(row);
    changed();
    startCorrecting();
  }

  if (form) {
    form.addEventListener("click", function (event) {
      var key = event.target.closest(".type-key");
      if (key) { correcting = true; workspace.classList.add("correcting"); setType(key.dataset.type); return; }
      var remove = event.target.closest(".seg-remove");
      if (remove) { remove.closest("[data-row]").remove(); activate(rows()[0]); changed(); }
    });
    form.addEventListener("focusin", function (event) {
      var row = event.target.closest("[data-row]");
      if (row) activate(row);
    });
    form.addEventListener("change", function (event) {
      if (event.target.closest("[data-row]") || /^share_|^dominant_type$|^present$/.test(event.target.name)) changed();
    });
    form.addEventListener("input", summarise);
    refreshKeys();
    summarise();
    // A new preview (what saving would record) is brought into view inside the panel.
    form.addEventListener("htmx:afterSwap", function (event) {
      if (event.target.id === "correction-preview") event.target.scrollIntoView({block: "nearest"});
    });
  }
  all("[data-split]").forEach(function (button) {
    button.addEventListener("click", function () { split(parseInt(button.dataset.split, 10)); });
  });
  all("[data-take]").forEach(function (button) {
    button.addEventListener("click", function () { take(JSON.parse(button.dataset.take)); });
  });

  // -- keys --------------------------------------------------------------------------------------

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var key = event.key;
    if (correcting) {
      var free = !typing(target) || target.tagName === "SELECT";
      if (/^[1-5]$/.test(key) && free) {
        event.preventDefault();
        setType(TYPES[parseInt(key, 10) - 1]);
        return;
      }
      var plainButton = target.tagName === "BUTTON" && !target.classList.contains("type-key");
      if (key === "Enter" && target.tagName !== "TEXTAREA" && !plainButton) {
        event.preventDefault();
        press(one("#correct-button"));
        return;
      }
      if (key === "Escape") { stopCorrecting(); return; }
    }
    if (typing(target)) return;
    var takes = all("[data-take]");
    if (/^[12]$/.test(key) && takes.length) {
      event.preventDefault();
      take(JSON.parse(takes[parseInt(key, 10) - 1].dataset.take));
      return;
    }
    switch (key.toLowerCase()) {
      case "v":
        var validate = one("#validate-button");
        if (!validate || validate.disabled) break;
        event.preventDefault();
        if (one("#will-record") && one("#will-record").dataset.action !== "validate") {
          say("Nothing was recorded: the panel shows a correction. Press Enter to save it, " +
            "or R to put the machine's answer back and validate it.");
          break;
        }
        press(validate);
        break;
      case "r": if (machine && !form.querySelector("fieldset:disabled")) { event.preventDefault(); restoreMachine(); } break;
      case "b":
        if (form && !form.querySelector("fieldset:disabled") && one("[data-split]")) {
          var page = pageInView();
          if (page > 1) { event.preventDefault(); split(page); }
        }
        break;
      case "c": if (startCorrecting()) event.preventDefault(); break;
      case "s": if (press(one("#skip-button"))) event.preventDefault(); break;
      case "u":
        var undo = one("#undo-form");
        if (undo) { event.preventDefault(); undo.requestSubmit(); }
        break;
      case "n":
        var next = one("#next-link");
        if (next) { event.preventDefault(); window.location.href = next.href; }
        break;
      case "j": event.preventDefault(); select(current + 1); break;
      case "k": event.preventDefault(); select(current - 1); break;
      case "+": case "=": if (pages) { event.preventDefault(); stepZoom(1); } break;
      case "-": if (pages) { event.preventDefault(); stepZoom(-1); } break;
    }
  });
})();
