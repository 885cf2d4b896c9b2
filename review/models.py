"""Review packets, decisions, ground truth and audit (built in the SME review issue)."""
