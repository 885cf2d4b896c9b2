"""The verifier chain V1-V4 and the V5 arbiter: pure modules, no Django."""
