"""The evaluator's data: observations, coverage points and reports, their wording
and exclusions (no simulator, no process, no parse of untrusted text)."""
