"""``llm4cov cache info|clear``: the result cache and the build store on disk."""

from __future__ import annotations

import typer

from llm4cov.sim.cache import (
    BUILD_DIR,
    BUILD_LIMIT_VAR,
    BUILD_MAX_BYTES,
    DB_NAME,
    ResultCache,
    cache_root,
    dir_bytes,
    evict_build_store,
    limit_bytes,
)
from llm4cov.sim.config import SimConfig

cache_app = typer.Typer(
    help="Show or empty the result cache and the build store.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

MIB = 1024**2


def _results() -> ResultCache:
    config = SimConfig()
    return ResultCache(cache_root(config) / DB_NAME, config.cache_max_bytes)


@cache_app.command("info")
def info() -> None:
    """Where the caches live, their size and their bound.

    The root is $LLM4COV_CACHE_DIR, else $XDG_CACHE_HOME/llm4cov or ~/.cache/llm4cov.
    Bounds: $LLM4COV_RESULT_CACHE_MAX_MB and $LLM4COV_BUILD_CACHE_MAX_MB.
    """
    root = cache_root(SimConfig())
    results = _results()
    entries, stored = results.stats() if results.path.exists() else (0, 0)
    files, built = dir_bytes(root / BUILD_DIR)
    build_limit = limit_bytes(BUILD_LIMIT_VAR, BUILD_MAX_BYTES)
    typer.echo(f"root: {root}")
    typer.echo(f"results: {results.path}: {entries} observations, {stored / MIB:.1f} MiB "
               f"of {results.max_bytes / MIB:.0f} MiB")
    typer.echo(f"build: {root / BUILD_DIR}: {files} files, {built / MIB:.1f} MiB "
               f"of {build_limit / MIB:.0f} MiB")


@cache_app.command("clear")
def clear(
    results: bool = typer.Option(True, "--results/--no-results",
                                 help="Empty the result cache."),
    build: bool = typer.Option(True, "--build/--no-build",
                               help="Empty the build store (rebuilt on demand)."),
) -> None:
    """Empty the result cache and the build store (both by default).

    Clearing the result cache is safe while other runs use it; clear the build store
    when no simulation runs (a build whose precompiled header vanishes fails).
    """
    root = cache_root(SimConfig())
    if results:
        cache = _results()
        count = cache.clear() if cache.path.exists() else 0
        typer.echo(f"results: {count} observations removed")
    if build:
        freed = evict_build_store(root / BUILD_DIR, max_bytes=0, grace_s=0)
        typer.echo(f"build: {freed / MIB:.1f} MiB removed")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
