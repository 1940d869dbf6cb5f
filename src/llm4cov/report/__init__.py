"""Coverage reports for people and other tools, built from ``coverage.dat``.

- :mod:`~llm4cov.report.capture`: run the evaluator and keep ``coverage.dat`` (and the
  work dir or a waveform dump when asked);
- :mod:`~llm4cov.report.data`: the report's content from the raw points;
- :mod:`~llm4cov.report.html`: the annotated, self-contained HTML report;
- :mod:`~llm4cov.report.lcov`: LCOV ``.info`` (``genhtml``) and UCIS XML (pyucis) exports.

See ``docs/reports.md``.
"""
