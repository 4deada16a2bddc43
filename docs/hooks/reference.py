"""An MkDocs hook: the reference pages, generated at every build from the code itself, and
the README as the site's home page.

``reference/settings.md`` comes from the settings model (``shared.config.Settings``): every
variable as people set it, with its type, default and description. ``reference/commands.md``
comes from the ``quantdesk`` command (the Typer app of ``cli.main``): every command and
subcommand with its usage, help, options and arguments, as ``--help`` shows them. Both walk
what they find, naming no setting and no command, so neither can drift from the code. The
pages are virtual files of the build, never written into ``docs/``. The home page is the
README with its links into ``docs/`` made relative to the site.
"""

from __future__ import annotations

import enum
import inspect
import json
import os
import re
import sys
import types
from collections.abc import Iterator
from datetime import timedelta
from decimal import Decimal
from importlib import import_module
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin
from unittest import mock

import annotated_types
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from pydantic import AliasChoices, AliasPath, BaseModel, SecretStr, TypeAdapter
from pydantic.fields import FieldInfo

HOME_PAGE = "index.md"
SETTINGS_PAGE = "reference/settings.md"
COMMANDS_PAGE = "reference/commands.md"
LONG_DEFAULT = 60
"""A default longer than this many characters is summarised, not printed whole."""


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Make the project importable: the build may run from anywhere."""
    root = str(_root(config))
    if root not in sys.path:
        sys.path.insert(0, root)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the home page and the two reference pages to the build."""
    if files.get_file_from_path(HOME_PAGE) is None:
        files.append(File.generated(config, HOME_PAGE, content=home_page(_root(config))))
    files.append(File.generated(config, SETTINGS_PAGE, content=settings_page(_root(config))))
    files.append(File.generated(config, COMMANDS_PAGE, content=commands_page(_root(config))))
    return files


def _root(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).resolve().parent


def home_page(root: Path) -> str:
    """The README, its links and pictures under ``docs/`` pointing into the site instead."""
    readme = (root / "README.md").read_text()
    return re.sub(r"(\]\(|src=\")docs/", r"\1", readme)


# --- settings -------------------------------------------------------------------------------


def settings_page(root: Path) -> str:
    """The settings reference, from the root settings model and every model nested in it."""
    from shared import config as settings_module
    from shared.llm.providers import PROVIDERS

    model = settings_module.Settings
    conf = model.model_config
    prefix = str(conf.get("env_prefix") or "")
    delimiter = str(conf.get("env_nested_delimiter") or "")
    env_file = conf.get("env_file")
    lines = [
        "# Settings",
        "",
        f"Generated from the settings model (`{_source_of(model, root)}`) at every build of "
        "this site.",
        "",
        f"Every setting is an environment variable with the prefix `{prefix}`"
        + (
            f", or a line of the file `{env_file}` in the directory a process starts in"
            if env_file
            else ""
        )
        + f". A field of a nested block is the block's variable, `{delimiter}`, and the field: "
        + f"`{prefix}TEMPORAL{delimiter}ADDRESS`. Names are "
        + ("case-sensitive" if conf.get("case_sensitive") else "not case-sensitive")
        + ". Lists and objects are given as JSON. An invalid value stops the process at start, "
        "naming the variable and what it accepts.",
        "",
        "A secret's default is never shown. See [Configuration](../configuration.md) for the "
        "settings most desks change.",
        "",
    ]
    scalars: list[tuple[str, FieldInfo, Any]] = []
    blocks: list[tuple[str, FieldInfo, Any]] = []
    providers: list[tuple[str, FieldInfo, Any]] = []
    # No variable of this machine reaches a default: some blocks read a vendor's own variable
    # (FRED_API_KEY, EDGAR_IDENTITY) when they are built.
    with mock.patch.dict(os.environ, clear=True):
        for name, field in model.model_fields.items():
            default = _field_default(field, root)
            if _nested_model(field.annotation) is None:
                scalars.append((name, field, default))
            elif name in PROVIDERS:
                providers.append((name, field, default))
            else:
                blocks.append((name, field, default))
    lines += ["## General", ""]
    lines += _settings_table(
        (_top_variable(name, field, prefix), field, default) for name, field, default in scalars
    )
    for name, field, default in blocks:
        variable = prefix + _env_name(name, field).upper()
        lines += _block_section(variable, field, default, prefix, delimiter, level=2)
    if providers:
        lines += [
            "## Providers",
            "",
            "One block per row of the provider registry (`shared/llm/providers.py`); its "
            "defaults are the row's.",
            "",
        ]
        for name, field, default in providers:
            spec = PROVIDERS[name]
            fallbacks = [
                f"`{variable}` when `{prefix}{name.upper()}{delimiter}{what.upper()}` is unset"
                for variable, what in ((spec.key_env, "api_key"), (spec.base_url_env, "base_url"))
                if variable
            ]
            models = ", ".join(
                f"{role} `{model}`"
                for role, model in (
                    ("quick", spec.quick_model),
                    ("deep", spec.deep_model),
                    ("vision", spec.vision_model),
                )
                if model
            )
            note = f"Provider `{name}`, served on the task queue `{spec.task_queue}`."
            if models:
                note += f" Its models when none is set: {models}."
            if fallbacks:
                note += " Reads " + "; ".join(fallbacks) + "."
            variable = prefix + _env_name(name, field).upper()
            lines += _block_section(variable, field, default, prefix, delimiter, level=3, note=note)
    return "\n".join(lines) + "\n"


def _block_section(
    variable: str,
    field: FieldInfo,
    value: Any,
    prefix: str,
    delimiter: str,
    *,
    level: int,
    note: str = "",
) -> list[str]:
    """A heading and a table for the nested block of ``variable``, its own blocks after it."""
    model = _nested_model(field.annotation)
    assert model is not None
    anchor = variable.removeprefix(prefix).lower().replace("_", "-").strip("-")
    lines = [f"{'#' * level} `{variable}{delimiter}*` {{#{anchor}}}", ""]
    if note:
        lines += [note, ""]
    else:
        about = [_first_paragraph(model.__doc__), field.description or ""]
        lines += [_escape(text) + "\n" for text in dict.fromkeys(about) if text]
    rows: list[tuple[str, FieldInfo, Any]] = []
    nested: list[tuple[str, FieldInfo, Any]] = []
    for name, subfield in model.model_fields.items():
        sub_variable = f"{variable}{delimiter}{_env_name(name, subfield).upper()}"
        default = None if value is None else getattr(value, name)
        entry = (sub_variable, subfield, default)
        (nested if _nested_model(subfield.annotation) else rows).append(entry)
    lines += _settings_table(iter(rows))
    for sub_variable, subfield, default in nested:
        lines += _block_section(
            sub_variable, subfield, default, prefix, delimiter, level=min(level + 1, 6)
        )
    return lines


def _settings_table(rows: Iterator[tuple[str, FieldInfo, Any]]) -> list[str]:
    lines = ["| variable | type | default | description |", "|---|---|---|---|"]
    for variable, field, default in rows:
        lines.append(
            "| "
            + " | ".join(
                (
                    f"`{variable}`",
                    _cell(_type_text(field.annotation) + _bounds(field)),
                    _cell(_default_text(field.annotation, default)),
                    _cell(_escape(field.description or "")),
                )
            )
            + " |"
        )
    return [*lines, ""]


def _source_of(thing: Any, root: Path) -> str:
    """Where ``thing`` is defined, relative to the project: ``shared/config/settings.py``."""
    source = inspect.getsourcefile(thing)
    return Path(source).resolve().relative_to(root).as_posix() if source else thing.__module__


def _top_variable(name: str, field: FieldInfo, prefix: str) -> str:
    """pydantic-settings reads a top-level alias as the whole variable, without the prefix."""
    alias = _alias(field)
    return alias.upper() if alias else f"{prefix}{name.upper()}"


def _env_name(name: str, field: FieldInfo) -> str:
    return _alias(field) or name


def _alias(field: FieldInfo) -> str | None:
    alias = field.validation_alias or field.alias
    if isinstance(alias, AliasChoices):
        first = alias.choices[0]
        return first if isinstance(first, str) else None
    if isinstance(alias, AliasPath):
        return None
    return alias


class _Unset:
    """A default that cannot be shown as a value: a call made when a process starts."""

    def __init__(self, text: str) -> None:
        self.text = text


def _field_default(field: FieldInfo, root: Path) -> Any:
    """The default of a top-level field. A factory of the project is called (a nested block,
    a table of defaults); one from elsewhere (the host's name) is named, not called, since
    its value here is this machine's."""
    factory = field.default_factory
    if factory is None:
        return field.get_default(call_default_factory=False)
    if not isinstance(factory, type) and not _in_project(factory, root):
        module = str(getattr(factory, "__module__", "") or "").lstrip("_")
        name = getattr(factory, "__qualname__", repr(factory))
        return _Unset(f"`{module}.{name}()` when the process starts" if module else name)
    return field.get_default(call_default_factory=True, validated_data={})


def _in_project(function: Any, root: Path) -> bool:
    try:
        source = inspect.getsourcefile(function)
    except TypeError:  # a builtin
        return False
    return source is not None and Path(source).resolve().is_relative_to(root)


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    """The model a field nests (``X`` or ``X | None``), or None for any other type."""
    for candidate in _union_members(annotation):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _union_members(annotation: Any) -> list[Any]:
    annotation = _strip(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [_strip(arg) for arg in get_args(annotation) if arg is not type(None)]
    return [annotation]


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _holds_secret(annotation: Any) -> bool:
    annotation = _strip(annotation)
    if annotation is SecretStr:
        return True
    return any(_holds_secret(arg) for arg in get_args(annotation))


SIMPLE_TYPES: dict[Any, str] = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    Decimal: "decimal",
    Path: "path",
    SecretStr: "secret",
    timedelta: "duration (ISO 8601, e.g. PT30M, or seconds)",
    Any: "any value",
}


def _type_text(annotation: Any) -> str:
    """A type as people read it: ``integer``, ``one of `a`, `b```, ``list of string``."""
    annotation = _strip(annotation)
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        parts = [_type_text(arg) for arg in get_args(annotation) if arg is not type(None)]
        return " or ".join(dict.fromkeys(parts))
    if origin is Literal:
        return "one of " + ", ".join(f"`{value}`" for value in get_args(annotation))
    if origin in (list, set, frozenset, tuple):
        inner = [arg for arg in get_args(annotation) if arg is not Ellipsis]
        return "list of " + (_type_text(inner[0]) if inner else "values")
    if origin is dict:
        key, value = get_args(annotation) or (str, Any)
        return f"JSON object of {_type_text(key)} to {_type_text(value)}"
    if annotation in SIMPLE_TYPES:
        return SIMPLE_TYPES[annotation]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return "one of " + ", ".join(f"`{member.value}`" for member in annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = ", ".join(f"`{name}`" for name in annotation.model_fields)
        return f"object ({fields})"
    return getattr(annotation, "__name__", str(annotation))


BOUNDS = (
    (annotated_types.Ge, "ge", "at least"),
    (annotated_types.Gt, "gt", "above"),
    (annotated_types.Le, "le", "at most"),
    (annotated_types.Lt, "lt", "below"),
    (annotated_types.MinLen, "min_length", "length at least"),
    (annotated_types.MaxLen, "max_length", "length at most"),
)


def _bounds(field: FieldInfo) -> str:
    """The numeric and length limits a field declares, e.g. ``, at least 1, at most 65535``."""
    found = [
        f"{word} {getattr(item, attribute)}"
        for item in field.metadata
        for kind, attribute, word in BOUNDS
        if isinstance(item, kind)
    ]
    return f", {', '.join(found)}" if found else ""


def _default_text(annotation: Any, value: Any) -> str:
    if isinstance(value, _Unset):
        return value.text
    if _holds_secret(annotation):
        return "unset" if value in (None, [], {}, "") else "set (secret, not shown)"
    if value is None:
        return "unset"
    try:
        plain = TypeAdapter(annotation).dump_python(value, mode="json")
    except Exception:  # a type pydantic cannot serialize alone: show the value as Python does
        plain = str(value)
    text = plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)
    if text == "":
        return '`""`'
    if len(text) <= LONG_DEFAULT:
        return f"`{text}`"
    if isinstance(plain, dict):
        keys = list(plain)
        shown = ", ".join(f"`{key}`" for key in keys[:6])
        return f"{len(keys)} entries: {shown}" + (", ..." if len(keys) > 6 else "")
    return f"`{text[:LONG_DEFAULT]}`..."


# --- commands -------------------------------------------------------------------------------

DEFAULT_MARKS = re.compile(r"\s*\[(default: [^\]]*|required|env var: [^\]]*)\]")


def commands_page(root: Path) -> str:
    """The command reference, from the command tree ``quantdesk`` runs."""
    import typer.main

    from cli import main as cli_main
    from cli.doors import DOOR_MODULES

    command = typer.main.get_command(cli_main.app)
    name = "quantdesk"
    ctx = command.context_class(command, info_name=name)
    lines = [
        "# Commands",
        "",
        f"Generated from the `quantdesk` command (`{_source_of(cli_main, root)}`) at every "
        "build of this site: what `--help` prints, for every command. Every command also "
        "takes `--help`.",
        "",
    ]
    lines += _help_paragraphs(command.help)
    lines += _command_body(command, ctx)
    for words, sub, sub_ctx in _walk(command, ctx, [name]):
        if words[1:] and words[1] in DOOR_MODULES:  # handed over: the door's own command
            door = import_module(f"{DOOR_MODULES[words[1]]}.__main__")
            sub = typer.main.get_command(door.app)
            sub_ctx = sub.context_class(sub, parent=ctx, info_name=words[1])
        level = min(len(words), 6)
        anchor = "-".join(words[1:])
        lines += [f"{'#' * level} `{' '.join(words)}` {{#{anchor}}}", ""]
        if getattr(sub, "deprecated", False):
            lines += ["*Deprecated.*", ""]
        lines += _help_paragraphs(sub.help or sub.short_help)
        lines += _command_body(sub, sub_ctx)
    return "\n".join(lines) + "\n"


def _walk(command: Any, ctx: Any, words: list[str]) -> Iterator[tuple[list[str], Any, Any]]:
    """Every visible subcommand below ``command``, depth first, in the order help lists them."""
    if not hasattr(command, "list_commands"):
        return
    for name in command.list_commands(ctx):
        sub = command.get_command(ctx, name)
        if sub is None or getattr(sub, "hidden", False):
            continue
        sub_ctx = sub.context_class(sub, parent=ctx, info_name=name)
        yield [*words, name], sub, sub_ctx
        yield from _walk(sub, sub_ctx, [*words, name])


def _command_body(command: Any, ctx: Any) -> list[str]:
    usage = command.get_usage(ctx).removeprefix("Usage:").strip()
    lines = ["```text", usage, "```", ""]
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None or getattr(param, "hidden", False) or "--help" in param.opts:
            continue
        names, text = record
        marks = [mark.group(1) for mark in DEFAULT_MARKS.finditer(text)]
        text = DEFAULT_MARKS.sub("", text).strip()
        default = next((m.removeprefix("default: ") for m in marks if m.startswith("default")), "")
        required = "required" in marks
        envvar = next((m for m in marks if m.startswith("env var")), "")
        kind = "argument" if param.param_type_name == "argument" else "option"
        description = _escape(text) + (f" ({_escape(envvar)})" if envvar else "")
        rows.append(
            "| "
            + " | ".join(
                (
                    f"`{names}`",
                    kind,
                    "required" if required else (f"`{default}`" if default else ""),
                    _cell(description),
                )
            )
            + " |"
        )
    if rows:
        lines += ["| name | kind | default | description |", "|---|---|---|---|", *rows, ""]
    if hasattr(command, "list_commands"):
        subs = [
            (name, sub)
            for name in command.list_commands(ctx)
            if (sub := command.get_command(ctx, name)) is not None
            and not getattr(sub, "hidden", False)
        ]
        if subs:
            lines += ["| command | what it does |", "|---|---|"]
            for name, sub in subs:
                path = ctx.command_path.split()[1:] + [name]
                summary = _cell(_escape(sub.get_short_help_str(limit=120)))
                lines.append(f"| [`{name}`](#{'-'.join(path)}) | {summary} |")
            lines.append("")
    return lines


# --- text -----------------------------------------------------------------------------------

CODE_SPAN = re.compile(r"(`+[^`]*`+)")


def _help_paragraphs(text: str | None) -> list[str]:
    """A docstring's paragraphs, each on one line, as Markdown; what follows ``\\f`` is for
    the code's readers only, as in ``--help``."""
    if not text:
        return []
    text = inspect.cleandoc(text).split("\f")[0]
    paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", text) if part.strip()]
    return [line for paragraph in paragraphs for line in (_escape(paragraph), "")]


def _first_paragraph(text: str | None) -> str:
    if not text:
        return ""
    return " ".join(re.split(r"\n\s*\n", inspect.cleandoc(text))[0].split())


def _escape(text: str) -> str:
    """Markdown that shows ``text`` as written: code spans kept, other markup escaped."""
    parts = CODE_SPAN.split(text)
    for index in range(0, len(parts), 2):
        plain = parts[index]
        for char in "\\*_[]":
            plain = plain.replace(char, "\\" + char)
        parts[index] = plain.replace("<", "&lt;").replace(">", "&gt;")
    return "".join(parts)


def _cell(text: str) -> str:
    """Text that stays in its table cell."""
    return " ".join(text.split()).replace("|", "\\|")
