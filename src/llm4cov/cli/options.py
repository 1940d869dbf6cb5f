"""Command-line flags read from the settings models (TRL's field-metadata pattern).

A :class:`Flag` names a field of a command's settings model by its dotted key
(``sim.compile_timeout_s``); the flag's default, help and choices are the field's
(written once, on the model). :func:`with_flags` adds the flags to a Typer command and
hands the command the flags given on the command line as one nested mapping, which
overrides the YAML file and ``--set`` (:func:`llm4cov.util.settings.load`); a flag left
at its default never overrides the file.
"""

from __future__ import annotations

import functools
import inspect
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from llm4cov.util.settings import deep_update, field_doc, nested, to_mapping

F = TypeVar("F", bound=Callable[..., Any])
_ROLE = re.compile(r":\w+:`~?([^`]+)`")
"""A Sphinx role in a field docstring (``:mod:`x```): its text in the help."""


@dataclass(frozen=True)
class Flag:
    """One flag of a settings field.

    ``key``: the field's dotted path in the command's model. ``decls``: the flag names
    (``--fsm/--no-fsm`` for a switch). ``comma_list``: a ``tuple[str, ...]`` field read
    from one comma-separated value (``--baselines random,reference``); other tuple
    fields are repeatable flags. ``options``: more ``typer.Option`` keywords (``min``).
    """

    key: str
    decls: tuple[str, ...]
    comma_list: bool = False
    options: tuple[tuple[str, Any], ...] = ()

    @property
    def param(self) -> str:
        """The command parameter's name (``sim__seed`` for ``sim.seed``)."""
        return self.key.replace(".", "__")

    def field(self, model: type[BaseModel]) -> FieldInfo:
        """The field of ``model`` this flag sets."""
        owner, leaf = self.owner(model)
        return owner.model_fields[leaf]

    def owner(self, model: type[BaseModel]) -> tuple[type[BaseModel], str]:
        """The (nested) model that holds this flag's field, and the field's name."""
        *parents, leaf = self.key.split(".")
        for part in parents:
            model = model.model_fields[part].annotation  # type: ignore[assignment]
        return model, leaf

    def default(self, model: type[BaseModel]) -> Any:
        """The model's default, as the command line shows and parses it (None for a
        required field: the YAML file may give it)."""
        field = self.field(model)
        if field.is_required():
            return None
        value = field.get_default(call_default_factory=True)
        if self.comma_list:
            return ",".join(value)
        if isinstance(value, tuple):
            return list(value) or None
        return value

    def annotation(self, model: type[BaseModel]) -> Any:
        """The parameter type Typer parses: the field's, without ``None``; tuples as
        lists (repeatable) or, with ``comma_list``, one string."""
        hint = self.field(model).annotation
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            hint = next(a for a in typing.get_args(hint) if a is not type(None))
        if typing.get_origin(hint) is tuple:
            item = typing.get_args(hint)[0]
            return str if self.comma_list else types.GenericAlias(list, (item,))  # list[item]
        return hint

    def option(self, model: type[BaseModel]) -> Any:
        """The ``typer.Option`` of this flag."""
        text = (field_doc(*self.owner(model)) or "").split("\n\n")[0]
        text = _ROLE.sub(r"\1", text).replace("``", "")
        return typer.Option(self.default(model), *self.decls, help=" ".join(text.split()),
                            **dict(self.options))

    def value(self, raw: Any) -> Any:
        """The settings value of the parsed flag ``raw``."""
        if self.comma_list:
            return tuple(v.strip() for v in raw.split(",") if v.strip())
        return tuple(raw) if isinstance(raw, list) else raw


def flag(key: str, *decls: str, comma_list: bool = False, **options: Any) -> Flag:
    """A :class:`Flag` (``options``: more ``typer.Option`` keywords such as ``min``);
    without ``decls``, the field's name in dashes (``sim.max_steps``: ``--max-steps``)."""
    return Flag(key, decls or (f"--{_dashed(key)}",), comma_list, tuple(options.items()))


def switch(key: str, **options: Any) -> Flag:
    """The :class:`Flag` of a boolean field, on and off (``cache``: ``--cache/--no-cache``)."""
    return flag(key, f"--{_dashed(key)}/--no-{_dashed(key)}", **options)


def _dashed(key: str) -> str:
    return key.rpartition(".")[2].replace("_", "-")


def with_options(name: str, options: Mapping[str, tuple[Any, Any]],
                 combine: Callable[[typer.Context, dict[str, Any]], Any]) -> Callable[[F], F]:
    """Add the parameters ``options`` (parameter name -> (type, ``typer.Option``)) to a
    Typer command that takes ``ctx: typer.Context`` and a parameter ``name``; the
    command gets ``combine(ctx, values of those options)`` as ``name``."""

    def wrap(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != name]
        added = [inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, default=option,
                                   annotation=annotation)
                 for param, (annotation, option) in options.items()]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            values = {param: kwargs.pop(param) for param in options}
            return command(*args, **{name: combine(kwargs["ctx"], values)}, **kwargs)

        run.__signature__ = signature.replace(parameters=own + added)  # type: ignore[attr-defined]
        return run  # type: ignore[return-value]

    return wrap


def parameter_source(ctx: typer.Context, name: str) -> str:
    """Where parameter ``name`` of the command got its value (``COMMANDLINE``,
    ``ENVIRONMENT``, ``DEFAULT``, ...): click records a source for each of the command's
    parameters once it has parsed them."""
    source = ctx.get_parameter_source(name)
    assert source is not None, f"{name}: not a parsed parameter of {ctx.info_name}"
    return source.name


def with_flags(model: type[BaseModel], *flags: Flag) -> Callable[[F], F]:
    """Add ``flags`` (fields of ``model``) to a Typer command that takes ``ctx:
    typer.Context`` and ``flags: dict``; the command gets the flags given on the
    command line as a nested mapping (``{"sim": {"workers": 2}}``)."""

    def given(ctx: typer.Context, values: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in flags:
            if parameter_source(ctx, f.param) in ("COMMANDLINE", "ENVIRONMENT"):
                out = deep_update(out, nested(f.key, f.value(values[f.param])))
        return out

    def wrap(command: F) -> F:
        options = {f.param: (f.annotation(model), f.option(model)) for f in flags}
        run = with_options("flags", options, given)(command)
        run.flags = (model, flags)  # type: ignore[attr-defined]
        return run

    return wrap


PRINT_CONFIG = typer.Option(False, "--print-config",
                            help="Print the resolved settings as YAML and exit.")


def print_config(config: Any) -> None:
    """Print ``config`` (a settings model or a mapping of them) as YAML."""
    data = {k: to_mapping(v) for k, v in config.items()} if isinstance(config, dict) \
        else to_mapping(config)
    import yaml

    typer.echo(yaml.safe_dump(data, sort_keys=False))


__all__ = ["PRINT_CONFIG", "Flag", "flag", "print_config", "switch", "with_flags",
           "with_options"]
