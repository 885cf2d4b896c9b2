"""The kernel every app shares: errors, HTTP helpers, durable jobs, caching, bulk writes and
aggregates. It imports no app of Vetted (only Django, RQ and the standard library)."""
