"""Classifiers side by side behind engine.protocols.Classifier: the offline (deterministic,
the embedded default and the second opinion) and the Gemini one."""
