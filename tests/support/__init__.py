

def default_preprocessor(task=None, name: str = "tb.sv"):
    """The default backend's preprocessing run for the static check of a testbench named
    ``name`` with ``task``'s RTL (None: alone), as the evaluator builds it."""
    from llm4cov.sim.backends import get_backend, preprocessor
    from llm4cov.sim.config import SimConfig, default_backend
    from llm4cov.tasks.model import SourceFile

    backend = get_backend(default_backend(), SimConfig())
    return preprocessor(backend, task, SourceFile(name=name, content=""))
