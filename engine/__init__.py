"""The reliability engine: schemas, classifiers, the LLM client, verifiers V1-V4, the V5
arbiter, auto-fix and the retry orchestrator, and field extraction with its evaluator-optimizer
loop.

Pure: no module here imports Django or any of Vetted's apps (tests/engine/test_purity.py
enforces it), so the engine can be tested, benchmarked and reused alone. The apps call it.
"""
