"""Runs, attempts and issues of the reliability engine (built in the reliability issue)."""
