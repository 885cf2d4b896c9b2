// Keyboard shortcuts for the review pages: V validate, C correct, N next packet,
// J / K next / previous issue. Ignored while typing in a field.
(function () {
  "use strict";
  var current = -1;
  function typing(event) {
    var t = event.target;
    return t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  }
  function focusIssue(step) {
    var issues = document.querySelectorAll("[data-issue]");
    if (!issues.length) return;
    current = Math.max(0, Math.min(issues.length - 1, current + step));
    issues.forEach(function (el) { el.classList.remove("current"); });
    issues[current].classList.add("current");
    issues[current].focus();
    issues[current].scrollIntoView({block: "start"});
  }
  document.addEventListener("keydown", function (event) {
    if (typing(event) || event.ctrlKey || event.metaKey || event.altKey) return;
    var key = event.key.toLowerCase();
    if (key === "v") {
      var validate = document.querySelector("#validate-form button[type=submit]");
      if (validate && !validate.disabled) { event.preventDefault(); validate.form.requestSubmit(validate); }
    } else if (key === "c") {
      var field = document.querySelector("#correct-form select, #correct-form textarea");
      if (field) { event.preventDefault(); field.focus(); field.scrollIntoView({block: "center"}); }
    } else if (key === "n") {
      var next = document.getElementById("next-link") || document.querySelector("a[accesskey=n]");
      if (next) { event.preventDefault(); window.location.href = next.href; }
    } else if (key === "j") {
      event.preventDefault(); focusIssue(1);
    } else if (key === "k") {
      event.preventDefault(); focusIssue(-1);
    }
  });
})();
