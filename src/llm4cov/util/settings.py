"""The one config layer: strict pydantic settings, read from YAML and ``--set`` overrides.

Every command's settings are a :class:`Settings` model (unknown keys and wrong types
are errors naming the key; nested sections are nested models or frozen dataclasses
such as :class:`~llm4cov.policies.base.SamplingParams`). Each default and each help
text is written once, on the field (its docstring is the help); the CLI reads both
(:mod:`llm4cov.cli.options`).

Precedence everywhere: model defaults < a preset (e.g. a synth stage) < the YAML file
(``--config``) < ``--set key.sub=value`` overrides < explicit command-line flags.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
import types
import typing
from collections.abc import Hashable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError


class ConfigError(ValueError):
    """An invalid setting: unknown key, wrong type or out-of-range value (the message
    names the key and, for an unknown one, the valid ones)."""


STRICT = ConfigDict(extra="forbid", frozen=True)
"""The pydantic config of every settings model and of the dataclasses they nest
(``__pydantic_config__``). A field's help is its attribute docstring, read by
:func:`field_doc` when a flag is built (not pydantic's ``use_attribute_docstrings``,
which on Python 3.11 walks the stack with ``inspect.getmodule`` for every model class:
about 20 ms of every command's start)."""


class Settings(BaseModel):
    """Base of every settings model: frozen (hashable), unknown keys forbidden, field
    docstrings as help (:func:`field_doc`). Constructing one with bad values raises pydantic's
    ``ValidationError`` (a ValueError); :func:`validate` and :func:`merge` raise
    :class:`ConfigError` with one ``key: problem`` line per bad key."""

    model_config = STRICT


S = TypeVar("S", bound=BaseModel)


def field_doc(model: type, name: str) -> str | None:
    """The attribute docstring of field ``name`` (the string literal right after its
    annotated assignment, cleaned as :func:`inspect.cleandoc` does), from the first
    class of ``model``'s MRO that defines it; None without one."""
    for cls in getattr(model, "__mro__", (model,)):
        docs = _attribute_docstrings(cls)
        if name in docs:
            return docs[name]
    return None


def _attribute_docstrings(cls: type) -> dict[str, str]:
    """``{field: docstring}`` of the annotated assignments in ``cls``'s own body."""
    module = sys.modules.get(cls.__module__)
    path = getattr(module, "__file__", None)
    return _module_docstrings(path).get(cls.__qualname__, {}) if path else {}


@functools.cache
def _module_docstrings(path: str) -> dict[str, dict[str, str]]:
    """``{class qualname: {field: docstring}}`` of every class in the source file
    ``path`` (parsed once per process); empty when it cannot be read or parsed."""
    import ast
    import inspect

    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError):
        return {}
    found: dict[str, dict[str, str]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if not isinstance(node, ast.ClassDef):
                continue
            docs = found.setdefault(prefix + node.name, {})
            for stmt, after in zip(node.body, node.body[1:], strict=False):
                if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                        and isinstance(after, ast.Expr)
                        and isinstance(after.value, ast.Constant)
                        and isinstance(after.value.value, str)):
                    docs[stmt.target.id] = inspect.cleandoc(after.value.value)
            visit(node.body, f"{prefix}{node.name}.")

    visit(tree.body, "")
    return found


@functools.cache
def _unique_key_loader() -> type:
    """PyYAML's safe loader, except that a key given twice in one mapping is an error
    (the YAML spec requires unique keys; PyYAML would keep the last one silently). Built
    on first use: a command that reads no YAML does not import PyYAML."""
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False
                              ) -> dict[Hashable, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    duplicate = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key; the base class reports it
                    continue
                if duplicate:
                    raise yaml.YAMLError(f"line {key_node.start_mark.line + 1}: key "
                                         f"{key!r} given twice in one mapping")
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def read_mapping(path: Path | str) -> dict[str, Any]:
    """The mapping of settings in YAML file ``path`` (an empty file is ``{}``).

    Raises:
        ConfigError: unreadable file, invalid YAML (a key given twice in one mapping
            included), or not a mapping.
    """
    import yaml

    try:
        loaded = yaml.load(Path(path).read_text(encoding="utf-8"), _unique_key_loader())
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})") from exc
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    if loaded is None:  # an empty file (or comments only)
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(f"{path}: expected a mapping of settings")
    return loaded


def parse_override(item: str) -> dict[str, Any]:
    """``key.sub=value`` as the nested mapping ``{"key": {"sub": value}}`` (the value is
    read as a YAML scalar; empty = null).

    Raises:
        ConfigError: not of the form key=value, or the value is not valid YAML.
    """
    import yaml

    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"override {item!r}: expected key=value, e.g. selection.candidates=8")
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as exc:
        problem = str(exc).splitlines()[0]
        raise ConfigError(f"override {item!r}: the value is not valid YAML ({problem}); "
                          "quote it, e.g. key='[1'") from exc
    return nested(key.strip(), value)


def nested(path: str, value: Any) -> dict[str, Any]:
    """``{"a": {"b": value}}`` for ``path`` ``"a.b"``."""
    *parents, leaf = path.split(".")
    out: dict[str, Any] = {leaf: value}
    for part in reversed(parents):
        out = {part: out}
    return out


def deep_update(base: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """``base`` with ``values`` applied: mappings merge key by key, anything else replaces."""
    out = dict(base)
    for key, value in values.items():
        old = out.get(key)
        if isinstance(value, Mapping) and isinstance(old, Mapping):
            out[key] = deep_update(old, value)
        else:
            out[key] = value
    return out


def validate(model: type[S], values: Mapping[str, Any], source: str = "config") -> S:
    """``values`` checked into a ``model``.

    Raises:
        ConfigError: ``source: key: problem`` for each bad key.
    """
    flags = booleans_for_numbers(model, values)
    if flags:
        raise ConfigError(f"{source}: {'; '.join(flags)}")
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(f"{source}: {describe(exc, model)}") from None


def booleans_for_numbers(node: Any, values: Mapping[str, Any], path: str = "") -> list[str]:
    """``key: True: ...`` for each boolean given to a number field of ``node`` (a model
    or dataclass; nested sections too). pydantic would read ``true`` as 1 (lax mode),
    so ``samples: true`` would silently mean one sample."""
    fields, problems = _fields(node), []
    for key, value in values.items():
        if key not in fields:
            continue
        where = f"{path}{key}"
        section = _section_type(fields[key])
        if isinstance(value, Mapping) and section is not None:
            problems += booleans_for_numbers(section, value, where + ".")
        elif isinstance(value, bool) and _numeric(fields[key]):
            problems.append(f"{where}: {value!r}: expected a number, not a boolean")
    return problems


def _numeric(annotation: Any) -> bool:
    """``annotation`` is int or float, possibly optional (``int | None``)."""
    if annotation in (int, float):
        return True
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    return (typing.get_origin(annotation) in (typing.Union, types.UnionType) and bool(args)
            and all(_numeric(a) for a in args))


def merge(config: S, values: Mapping[str, Any], source: str = "config") -> S:
    """A copy of ``config`` with ``values`` applied (nested sections take nested
    mappings, merged key by key).

    Raises:
        ConfigError: unknown key (the message lists the valid ones), wrong type, or a
            value the model rejects.
    """
    return validate(type(config), deep_update(config.model_dump(), values), source)


def load(model: type[S], yaml_path: Path | str | None = None, overrides: Iterable[str] = (),
         flags: Mapping[str, Any] | None = None, base: Mapping[str, Any] | None = None) -> S:
    """A ``model`` from ``base`` (e.g. a preset's values), updated by a YAML file, then
    by ``key.sub=value`` overrides, then by ``flags`` (a nested mapping of explicit
    command-line flags); mappings merge key by key.

    Raises:
        ConfigError: unreadable YAML, a malformed override, unknown key, wrong type or
            invalid value (the message names the sources and the key).
    """
    data = dict(base or {})
    sources = []
    if yaml_path is not None:
        data = deep_update(data, read_mapping(yaml_path))
        sources.append(str(yaml_path))
    for item in overrides:
        data = deep_update(data, parse_override(item))
        sources.append(f"--set {item}")
    if flags:
        data = deep_update(data, flags)
        sources.append("flags")
    return validate(model, data, ", ".join(sources) or "settings")


def resolve(base: S, yaml_path: Path | str | None = None, overrides: Iterable[str] = (),
            flags: Mapping[str, Any] | None = None) -> S:
    """:func:`load` on top of the settings ``base`` (e.g. a stage preset)."""
    return load(type(base), yaml_path, overrides, flags, base.model_dump())


def to_mapping(config: Any) -> dict[str, Any]:
    """Plain JSON/YAML form of a settings model or dataclass (tuples as lists, enums
    as their values, paths as strings)."""
    return TypeAdapter(type(config)).dump_python(config, mode="json")


def describe(exc: ValidationError, model: type[BaseModel]) -> str:
    """One line per problem of ``exc``: ``key.sub: what is wrong`` (unknown keys list
    the valid ones)."""
    lines = []
    for err in exc.errors():
        loc = err["loc"]
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
            msg = f"unknown key; valid: {', '.join(valid_keys(model, loc[:-1]))}"
        elif err["type"] in ("model_type", "dataclass_type", "model_attributes_type"):
            msg = "must be a mapping"
        elif "input" in err and err["type"] not in ("missing", "value_error"):
            msg = f"{err['input']!r}: {msg}"
        where = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc)
        where = where.replace(".[", "[")
        lines.append(f"{where}: {msg}" if where else msg)
    return "; ".join(lines)


def valid_keys(model: type[BaseModel], path: tuple = ()) -> list[str]:
    """The keys valid inside the section at ``path`` of ``model`` (list indices skipped)."""
    node: Any = model
    for part in path:
        if isinstance(part, int):
            continue
        fields = _fields(node)
        if part not in fields:
            return []
        node = _section_type(fields[part])
        if node is None:
            return []
    return sorted(_fields(node))


def _fields(node: Any) -> dict[str, Any]:
    """Field name -> annotation of a model class or dataclass."""
    if isinstance(node, type) and issubclass(node, BaseModel):
        return {n: f.annotation for n, f in node.model_fields.items()}
    if dataclasses.is_dataclass(node):
        hints = typing.get_type_hints(node)
        return {f.name: hints[f.name] for f in dataclasses.fields(node)}
    return {}


def _section_type(annotation: Any) -> Any:
    """The model class or dataclass inside ``annotation`` (``X | None``, ``tuple[X,
    ...]``), or None."""
    if isinstance(annotation, type) and (issubclass(annotation, BaseModel)
                                         or dataclasses.is_dataclass(annotation)):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _section_type(arg)
        if found is not None:
            return found
    return None


__all__ = [
    "STRICT",
    "ConfigError",
    "Settings",
    "deep_update",
    "describe",
    "field_doc",
    "load",
    "merge",
    "nested",
    "parse_override",
    "read_mapping",
    "resolve",
    "to_mapping",
    "valid_keys",
    "validate",
]
