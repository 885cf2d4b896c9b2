"""Clinician review pages, one module per kind of page. Views parse the request, call a
selector or a service, and render."""
