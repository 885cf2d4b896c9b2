"""Field extraction: data-defined templates, a deterministic offline extractor, the evaluator
and the evaluator-optimizer loop. Pure modules: no Django."""
