"""The benchmark harness in the CVDP-ECov protocol (``llm4cov bench``, docs/bench.md).

``config`` (BenchConfig, arms) -> ``plan`` (run.json) -> ``runner`` (samples through
the agent, durable rows, resume by replay; ``budget``, ``progress``) -> ``rows``
(results.jsonl) -> ``score`` (summary.json, built on the pure ``metrics``) ->
``report`` and ``plots``; ``pipeline`` ties them together.
"""
