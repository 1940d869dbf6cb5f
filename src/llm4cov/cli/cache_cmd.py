"""``llm4cov cache info|clear``: every cache on disk (results, build store, formal
results, fetched models, and the formal tools' compiled WebAssembly)."""

from __future__ import annotations

import shutil
from pathlib import Path

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
from llm4cov.util.remembered import HOST_DIR

FORMAL_DIR = "formal"
"""The formal closure's result cache below the root (``formal/closure.py``)."""

cache_app = typer.Typer(
    help="Show or empty the caches: results, build store, formal results, models.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)

MIB = 1024**2


def _results() -> ResultCache:
    config = SimConfig()
    return ResultCache(cache_root(config) / DB_NAME, config.cache_max_bytes)


def _models() -> tuple[Path, list[tuple[str, int]]]:
    """The models folder and ``(name, bytes)`` of every model in it."""
    from llm4cov.models import models_root

    root = models_root()
    found = sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []
    return root, [(p.name, dir_bytes(p)[1]) for p in found]


@cache_app.command("info")
def info() -> None:
    """Where every cache lives, its size and its bound.

    The root is $LLM4COV_CACHE_DIR, else $XDG_CACHE_HOME/llm4cov or ~/.cache/llm4cov;
    models: $LLM4COV_MODELS_DIR, else ROOT/models. Bounds:
    $LLM4COV_RESULT_CACHE_MAX_MB and $LLM4COV_BUILD_CACHE_MAX_MB (formal results and
    models are unbounded). The formal tools' compiled WebAssembly is YoWASP's own cache.
    """
    from llm4cov.formal.tools import yowasp_cache_dir

    root = cache_root(SimConfig())
    results = _results()
    entries, stored = results.stats() if results.path.exists() else (0, 0)
    files, built = dir_bytes(root / BUILD_DIR)
    build_limit = limit_bytes(BUILD_LIMIT_VAR, BUILD_MAX_BYTES)
    formal_files, formal = dir_bytes(root / FORMAL_DIR)
    models_dir, models = _models()
    wasm_files, wasm = dir_bytes(yowasp_cache_dir())
    typer.echo(f"root: {root}")
    typer.echo(f"results: {results.path}: {entries} observations, {stored / MIB:.1f} MiB "
               f"of {results.max_bytes / MIB:.0f} MiB")
    typer.echo(f"build: {root / BUILD_DIR}: {files} files, {built / MIB:.1f} MiB "
               f"of {build_limit / MIB:.0f} MiB")
    typer.echo(f"formal: {root / FORMAL_DIR}: {formal_files} results, {formal / MIB:.1f} MiB")
    named = ", ".join(f"{name} {size / MIB:.1f} MiB" for name, size in models)
    typer.echo(f"models: {models_dir}: {len(models)} models"
               + (f" ({named})" if named else ""))
    typer.echo(f"formal tools (YoWASP): {yowasp_cache_dir()}: {wasm_files} files, "
               f"{wasm / MIB:.1f} MiB (not cleared by `cache clear`)")
    total = stored + built + formal + sum(size for _, size in models) + wasm
    typer.echo(f"total: {total / MIB:.1f} MiB")


@cache_app.command("clear")
def clear(
    results: bool = typer.Option(True, "--results/--no-results",
                                 help="Empty the result cache."),
    build: bool = typer.Option(True, "--build/--no-build",
                               help="Empty the build store (rebuilt on demand) and the "
                               "remembered answers of the host's tools (versions, sandbox)."),
    formal: bool = typer.Option(True, "--formal/--no-formal",
                                help="Empty the formal closure's result cache."),
    models: bool = typer.Option(False, "--models/--no-models",
                                help="Remove the fetched models too (`model get` again)."),
) -> None:
    """Empty the result cache, the build store and the formal results (by default), and
    with --models the fetched models.

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
        answers = sorted((root / HOST_DIR).glob("*"))
        for path in answers:
            path.unlink(missing_ok=True)
        typer.echo(f"tool answers: {len(answers)} removed (asked again on the next call)")
    if formal:
        found = sorted((root / FORMAL_DIR).glob("*.json"))
        for path in found:
            path.unlink(missing_ok=True)
        typer.echo(f"formal: {len(found)} results removed")
    if models:
        models_dir, fetched = _models()
        for name, _ in fetched:
            shutil.rmtree(models_dir / name, ignore_errors=True)
        typer.echo(f"models: {len(fetched)} removed")


def register(app: typer.Typer) -> None:
    app.add_typer(cache_app, name="cache")
