"""The benchmark harness in the CVDP-ECov protocol (``llm4cov bench``, docs/bench.md).

``config`` (BenchConfig, arms) -> ``plan`` (run.json) -> ``runner`` (samples through
the agent, durable rows, resume by replay; ``budget``) -> ``rows``
(results.jsonl) -> ``score`` (summary.json, built on the pure ``metrics``) ->
``report`` and ``plots``; ``session`` ties them together (progress display:
:mod:`llm4cov.util.progress`).
"""
