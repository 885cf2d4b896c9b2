// Upload with progress: htmx posts the form (hx-post, multipart) and disables the button while
// the request runs (hx-disabled-elt); this shows how far the upload is and then that the server
// is checking and reading the files. A refused upload (400) replaces the form with the reasons.
(function () {
  "use strict";
  function part(id) { return document.getElementById(id); }
  function fromUpload(event) {
    var detail = event.detail || {};
    // The request's own element; an event fired on the swap target names the target as elt.
    var elt = (detail.requestConfig && detail.requestConfig.elt) || detail.elt || event.target;
    return Boolean(elt && elt.id === "upload-form");
  }

  document.addEventListener("htmx:beforeRequest", function (event) {
    if (!fromUpload(event)) return;
    part("upload-progress").hidden = false;
    part("upload-bar").value = 0;
    part("upload-status").textContent = "Uploading…";
    part("upload-button").textContent = "Uploading…";
  });
  document.addEventListener("htmx:xhr:progress", function (event) {
    if (!fromUpload(event) || !event.detail.lengthComputable || !event.detail.total) return;
    var percent = Math.round(100 * event.detail.loaded / event.detail.total);
    var bar = part("upload-bar");
    if (percent < bar.value) return;
    bar.value = percent;
    part("upload-status").textContent = percent < 100
      ? "Uploading… " + percent + "%"
      : "Uploaded. Checking and reading the files…";
  });
  document.addEventListener("htmx:beforeSwap", function (event) {
    if (fromUpload(event) && event.detail.xhr.status === 400) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    if (!fromUpload(event) || event.detail.successful || event.detail.xhr.status === 400) return;
    part("upload-status").textContent =
      "The upload did not go through (" + (event.detail.xhr.status || "no answer") + "). Try again.";
    part("upload-button").textContent = "Upload";
  });
})();
