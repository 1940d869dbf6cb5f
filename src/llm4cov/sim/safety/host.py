"""The host as every simulator step sees it: which of its environment variables a step
may inherit, and :class:`ToolchainError` when a tool it must provide is missing.

One rule for every backend and for the OS sandbox (:mod:`llm4cov.sim.safety.isolation`): a
build, a run or a static-check child gets an allowlist of the host's environment,
never a copy of it (no API keys, no make or loader overrides).
"""

from __future__ import annotations

import os
from collections.abc import Collection

#: Host variables a build step may inherit (and prefixes): the locale, ``HOME``, the
#: terminal type, and the settings of ccache and Verilator. The OS sandbox applies the
#: same rule (:mod:`llm4cov.sim.safety.isolation`).
HOST_ENV_NAMES = frozenset({"HOME", "LANG", "LANGUAGE", "TZ", "TERM"})
HOST_ENV_PREFIXES = ("LC_", "XDG_", "CCACHE_", "VERILATOR_", "YOWASP_")


def allowed_env_name(name: str, keep: Collection[str] = ()) -> bool:
    """Whether a host variable ``name`` may reach a build or sandboxed step: one of
    :data:`HOST_ENV_NAMES`, :data:`HOST_ENV_PREFIXES` or ``keep``."""
    return name in HOST_ENV_NAMES or name in keep or name.startswith(HOST_ENV_PREFIXES)


def host_env(keep: Collection[str] = ()) -> dict[str, str]:
    """The allowlisted part of this process's environment (:func:`allowed_env_name`;
    ``keep``: further names, e.g. ``PATH``), for a step that must not see the user's
    secrets, such as API keys."""
    return {k: v for k, v in os.environ.items() if allowed_env_name(k, keep)}


class ToolchainError(RuntimeError):
    """The simulator toolchain is missing or broken (an infrastructure failure)."""
