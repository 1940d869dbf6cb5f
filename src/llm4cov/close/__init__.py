"""``llm4cov close``: a regression of tests run to coverage closure, with merged
coverage and every remaining point explained (``docs/close.md``).

- :mod:`llm4cov.close.model`: the typed records (test origin, step record, residual
  causes, the run summary);
- :mod:`llm4cov.close.merge`: per-test coverage merged by point identity (the same
  counting rules as one run), contributions and the greedy minimization;
- :mod:`llm4cov.close.residual`: each uncovered point classified by cause;
- :mod:`llm4cov.close.loop`: the closure loop (random seeds and lengths, formal
  witnesses, a continuation, a model's answer), crash-safe and resumable;
- :mod:`llm4cov.close.formal_steps`: its formal analysis from reset and its
  continuation of the best test from the state that test ends in;
- :mod:`llm4cov.close.report`: ``coverage.md``, ``run.json`` and the HTML/LCOV/UCIS
  reports of the merged coverage.
"""
