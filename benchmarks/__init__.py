"""Evaluation and benchmark tooling, kept out of the production modules: the labelled-corpus
evaluator, the fault injector of bench_verify, and a PDF generator for tests, the demo and the
ingestion benchmark (it needs reportlab, a test extra)."""
