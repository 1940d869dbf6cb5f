"""The executor factory: the executor of a kind, by name."""

from __future__ import annotations

from llm4cov.exec.base import ExecutorError, ExecutorKind, SimExecutor
from llm4cov.sim.config import SimConfig


def get_executor(
    kind: ExecutorKind | str = ExecutorKind.LOCAL,
    workers: int | None = None,
    config: SimConfig | None = None,
    address: str | None = None,
) -> SimExecutor:
    """The executor named ``kind``.

    ``local``: ``workers`` processes (default: usable CPUs). ``ray``: Ray tasks; with
    ``address`` (``auto`` or ``HOST:PORT``) on a running cluster, otherwise on a local
    Ray instance of ``workers`` CPUs (see :class:`~llm4cov.exec.ray_executor.RayExecutor`).

    Raises:
        ExecutorError: unknown ``kind`` (the message lists the valid names),
            ``address`` with ``local``, Ray not installed, or a cluster not reachable.
    """
    try:
        kind = ExecutorKind(kind)
    except ValueError:
        valid = ", ".join(k.value for k in ExecutorKind)
        raise ExecutorError(f"unknown executor {kind!r}; valid: {valid}") from None
    if kind is ExecutorKind.LOCAL:
        if address is not None:
            raise ExecutorError("--address names a Ray cluster: it needs --executor ray")
        from llm4cov.exec.local import LocalExecutor

        return LocalExecutor(workers=workers, config=config)
    try:
        from llm4cov.exec.ray_executor import RayExecutor
    except ImportError as exc:
        raise ExecutorError(f"--executor ray needs the ray extra (pip install "
                            f"'llm4cov[ray]'): {exc}") from exc
    try:
        return RayExecutor(workers=workers, config=config, address=address)
    except ConnectionError as exc:
        raise ExecutorError(f"cannot reach the Ray cluster at {address}: {exc}") from exc
