// The review pages: the keyboard contract and the packet workspace. Loaded as a file (no inline
// script anywhere), so a strict Content-Security-Policy can forbid inline code.
//
// Keys (ignored while typing in a field):
//   V validate · C correct, then 1-5 type (Clinical Note, Pathology Report, Genomic Report,
//   Radiology Report, Other) and Enter to save · Esc leaves correcting · R puts the machine's
//   answer back in the panel · B a new document starts on the page in view · S skip · U undo
//   your last decision · N next · J / K next / previous issue · E the text around the current
//   evidence, shown or hidden · + / - zoom the page images, W fit the text's width ·
//   on an adjudication, 1 / 2 (when not correcting) take the first / second answer.
//
// Keys act only on what is on screen: a saving key (V, Enter) while what the machine said
// (the type, the segments, what the key will record) is out of view records nothing; it
// brings that part of the panel into view and says so, and the same key then records. A
// tablet's one-column page can put the panel below the fold; scrolling and recording in one
// press would record an answer the reviewer had not seen.
//
// The zoom (a step, or fit-width) is remembered per reviewer in this browser (localStorage,
// keyed by the user's id): a zoom suits a screen, so a tablet and a desk keep their own, and
// nothing is written to the server on every key.
//
// A key acts only on a page that has been on screen long enough to be read: 400 ms after it
// is painted (SETTLE_MS). Enter then V pressed 150 ms apart used to validate the next packet
// before anyone saw it. Keys never act on a focused form control either: a letter does not
// pick an option of a focused select (the browser's type-ahead turned "g" into Genomic), and
// Enter in a field does not submit the form unless the panel is being corrected.
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
  var fit = false;
  var contextShown = true;
  var user = document.body.dataset.user || "";
  var ZOOM_KEY = "vetted.zoom." + user;
  var SETTLE_MS = 400;
  var paintedAt = 0;
  function painted() {
    paintedAt = 0;
    delete document.documentElement.dataset.keysReady;
    // Two frames: the first runs before the page is painted, the second after.
    window.requestAnimationFrame(function () {
      window.requestAnimationFrame(function () {
        paintedAt = window.performance.now();
        // Said on the page too (data-keys-ready), for browser tests that act as a reader.
        window.setTimeout(function () { document.documentElement.dataset.keysReady = "true"; }, SETTLE_MS);
      });
    });
  }
  function settled() { return paintedAt > 0 && window.performance.now() - paintedAt >= SETTLE_MS; }
  painted();
  // A page shown again from the back-forward cache is painted again: it waits again.
  window.addEventListener("pageshow", function (event) { if (event.persisted) painted(); });

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
    openContext(item);
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

  // The paragraphs around the evidence are shown for the current issue (the first one on
  // arrival); E hides or shows them.
  function openContext(item) {
    items().forEach(function (el) {
      var open = el === item && contextShown;
      el.classList.toggle("ctx-open", open);
      var toggle = one("[data-ctx-toggle]", el);
      if (toggle) toggle.setAttribute("aria-expanded", String(open));
    });
  }
  function contextItem() {
    var list = items();
    return list[current] || one(".ctx-open") || list[0];
  }
  function toggleContext(item) {
    if (!item) return;
    contextShown = !item.classList.contains("ctx-open");
    openContext(item);
  }

  items().forEach(function (item, index) {
    item.addEventListener("click", function (event) {
      if (event.target.closest("[data-ctx-toggle]")) { toggleContext(item); return; }
      if (event.target.closest("a, summary, button")) return;
      select(index);
    });
  });

  // -- viewer: pages or text, zoom --------------------------------------------------------------

  function remember() {
    try { window.localStorage.setItem(ZOOM_KEY, fit ? "fit" : String(zoom)); } catch (e) { /* private mode */ }
  }
  function setZoom(next, keep) {
    if (!pages) return;
    pages.classList.remove("zoom-" + zoom);
    zoom = next;
    pages.classList.add("zoom-" + zoom);
    setFit(false, true);
    var level = one("#zoom-level");
    if (level) level.textContent = zoom + "%";
    if (!keep) remember();
  }
  function stepZoom(step) {
    var at = ZOOMS.indexOf(zoom);
    setZoom(ZOOMS[Math.max(0, Math.min(ZOOMS.length - 1, at + step))]);
  }

  // Fit width: the page's printed area (its margins cut away) fills the viewer, so a dense
  // report reads larger in a narrow viewer. The margins are measured on the page image
  // itself (same origin), so scans work as well as born-digital pages.
  function inkBounds(img) {
    var w = img.naturalWidth, h = img.naturalHeight;
    if (!w || !h) return null;
    var scale = Math.min(1, 400 / w);
    var cw = Math.max(1, Math.round(w * scale)), ch = Math.max(1, Math.round(h * scale));
    var canvas = document.createElement("canvas");
    canvas.width = cw; canvas.height = ch;
    var ctx = canvas.getContext("2d", {willReadFrequently: true});
    if (!ctx) return null;
    ctx.drawImage(img, 0, 0, cw, ch);
    var data;
    try { data = ctx.getImageData(0, 0, cw, ch).data; } catch (e) { return null; }
    var left = cw, right = -1;
    for (var y = 0; y < ch; y += 2) {
      for (var x = 0; x < cw; x++) {
        var i = (y * cw + x) * 4;
        if (data[i] + data[i + 1] + data[i + 2] < 600) {
          if (x < left) left = x;
          if (x > right) right = x;
        }
      }
    }
    if (right < left) return null;
    var pad = 0.015;
    return {left: Math.max(0, left / cw - pad), right: Math.min(1, (right + 1) / cw + pad)};
  }
  function fitFrame(frame) {
    var img = one("img", frame);
    if (!img) return;
    if (!img.complete || !img.naturalWidth) {
      img.addEventListener("load", function () { if (fit) fitFrame(frame); }, {once: true});
      return;
    }
    if (!frame.dataset.ink) {
      var ink = inkBounds(img);
      frame.dataset.ink = ink ? ink.left.toFixed(4) + " " + ink.right.toFixed(4) : "0 1";
    }
    var parts = frame.dataset.ink.split(" ").map(parseFloat);
    var width = Math.max(0.2, parts[1] - parts[0]);
    // CSSOM custom properties, not a style attribute: the policy forbids inline styles.
    frame.style.setProperty("--fit-scale", String(1 / width));
    frame.style.setProperty("--fit-left", String(parts[0]));
  }
  function setFit(on, keep) {
    if (!pages) return;
    fit = on;
    pages.classList.toggle("fit-width", on);
    all("[data-zoom='fit']").forEach(function (b) { b.setAttribute("aria-pressed", String(on)); });
    if (on) {
      pages.classList.remove("zoom-" + zoom);
      zoom = 100;
      pages.classList.add("zoom-100");
      var level = one("#zoom-level");
      if (level) level.textContent = "Fit";
      all(".page-frame", pages).forEach(fitFrame);
    }
    if (!keep) remember();
  }
  all("[data-zoom]").forEach(function (button) {
    button.addEventListener("click", function () {
      if (button.dataset.zoom === "fit") setFit(!fit); else stepZoom(parseInt(button.dataset.zoom, 10));
    });
  });
  (function restoreZoom() {
    if (!pages || !user) return;
    var saved = null;
    try { saved = window.localStorage.getItem(ZOOM_KEY); } catch (e) { return; }
    if (saved === "fit") setFit(true, true);
    else if (saved && ZOOMS.indexOf(parseInt(saved, 10)) >= 0) setZoom(parseInt(saved, 10), true);
  })();
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

  // "Also present" is for a type the segments miss: a type a segment already has cannot be
  // ticked (ticked, it left a panel that was neither the machine's answer nor a correction,
  // so neither V nor Enter could record it).
  function markPresent() {
    var typed = {};
    rows().forEach(function (row) { typed[one(".seg-type", row).value] = true; });
    all("input[name='present']", form).forEach(function (box) {
      var inSegments = typed[box.value] === true;
      if (inSegments) box.checked = false;
      box.disabled = inSegments;
      box.title = inSegments ? "A segment already has this type" : "";
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
    // "Also present" is for a type the segments miss: a type a segment already has cannot
    // be ticked (ticked, it would leave a panel that is neither the machine's answer nor a
    // correction, so neither V nor Enter could record it).
    markPresent();
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
      all("input[name='present']", form).some(function (i) { return i.checked && !i.disabled; });
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
    all("input[name^='share_']", form).forEach(function (i) { i.value = ""; });
    all("select[name='dominant_type']", form).forEach(function (s) { s.value = ""; });
    all("input[name='present']", form).forEach(function (i) { i.checked = false; });
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
    one("#type-picker").focus({preventScroll: true});
    reveal();
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
    // The new row, and what the key will record, stay in view (the preview below them
    // never pushes them out).
    reveal();
    if (!visibleIn(row)) row.scrollIntoView({block: "nearest"});
  }

  // -- keys act on what is on screen ------------------------------------------------------------

  function visibleIn(element) {
    // Whole within the window (above a fixed action bar) and within every scrolling parent.
    if (!element || !shown(element)) return false;
    var rect = element.getBoundingClientRect();
    var bottom = window.innerHeight;
    var bar = one(".decision-actions");
    if (bar && window.getComputedStyle(bar).position === "fixed") bottom = bar.getBoundingClientRect().top;
    if (rect.top < 0 || rect.bottom > bottom + 1) return false;
    for (var parent = element.parentElement; parent && parent !== document.body; parent = parent.parentElement) {
      var overflow = window.getComputedStyle(parent).overflowY;
      if (overflow === "auto" || overflow === "scroll") {
        var box = parent.getBoundingClientRect();
        if (rect.top < box.top - 1 || rect.bottom > box.bottom + 1) return false;
      }
    }
    return true;
  }
  // What the machine said and what a saving key records: the type line, the segment rows,
  // and the will-record line.
  function answerParts() {
    return [one(".classified"), one("#segment-rows"), one("#will-record")].filter(function (el) {
      return el && shown(el);
    });
  }
  function answerInView() { return answerParts().every(visibleIn); }
  // Starting to work in the panel (C, B, taking an answer) shows it: the type keys, the rows
  // and what Enter will record, so the saving key that follows acts on what is on screen.
  function reveal() {
    var parts = [one("#type-picker")].concat(answerParts()).filter(function (el) {
      return el && shown(el);
    });
    if (!parts.length || parts.every(visibleIn)) return;
    parts[0].scrollIntoView({block: "start"});
    var last = parts[parts.length - 1];
    if (!visibleIn(last)) last.scrollIntoView({block: "end"});
  }
  function bringAnswer(text) {
    var parts = answerParts();
    if (!parts.length) return;
    var note = one("#panel-note");
    if (note) {
      // The note first, above the answer, so it is read with it.
      note.textContent = text;
      note.hidden = false;
      parts.unshift(note);
    } else {
      say(text);
    }
    var first = parts[0], last = parts[parts.length - 1];
    first.scrollIntoView({block: "start"});
    if (!visibleIn(last)) last.scrollIntoView({block: "end"});
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
    markPresent();
    refreshKeys();
    summarise();
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
    var inForm = form && target && form.contains(target);
    // A letter never picks an option of a focused select in the panel (the digits 1-5 set
    // the type while correcting, below; arrows still move through the options).
    if (inForm && target.tagName === "SELECT" && key.length === 1 && !(correcting && /^[1-5]$/.test(key))) {
      event.preventDefault();
      return;
    }
    if (!settled()) {
      // Not read yet: no key acts (and Enter does not submit a focused field's form).
      if (!typing(target) || key === "Enter") event.preventDefault();
      return;
    }
    if (key === "Enter" && inForm && !correcting && target.tagName === "INPUT") {
      // Enter in a field of the panel submits nothing: C starts correcting, Enter saves.
      event.preventDefault();
      return;
    }
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
        if (!answerInView()) {
          bringAnswer("Nothing was recorded: here is what Enter will record. Check it, then press Enter again.");
          return;
        }
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
        if (!answerInView()) {
          bringAnswer("Nothing was recorded: this is what the machine said. Press V again to validate it.");
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
      case "e": if (items().length) { event.preventDefault(); toggleContext(contextItem()); } break;
      case "+": case "=": if (pages) { event.preventDefault(); stepZoom(1); } break;
      case "-": if (pages) { event.preventDefault(); stepZoom(-1); } break;
      case "w": if (pages && one(".page-frame", pages)) { event.preventDefault(); setFit(!fit); } break;
    }
  });
})();
