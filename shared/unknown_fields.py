"""Fields an input names that its model does not know, each with the nearest known name.

pydantic ignores an unknown key by default, so a typo in a start payload
(``{"max_ticker": 2}``) would run the default desk without a word, and a field the
desk does not have yet (``{"broker": "alpaca"}``) would seem accepted. Workflow
inputs are public contracts typed by hand, so every door (the ``temporal`` CLI,
the console's forms, ``quantdesk run``, schedules) refuses such a key, naming it
and the nearest field the model has.

The check walks the raw value beside the model's annotations, into nested models,
lists and mappings of them, so ``llm.modle`` is caught too. A model that reshapes
its raw input itself (a ``before`` or ``wrap`` model validator, such as
``AnalystReports``' flat JSON) or that declares what to do with extra keys is
taken at its word and not walked.
"""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

UNKNOWN_FIELD = "unknown_field"
"""The pydantic error type of an unknown field (``shared.validation_errors`` tells it)."""

_CLOSE_ENOUGH = 0.6
"""difflib's similarity from which a known name is offered as the one meant."""


@dataclass(frozen=True)
class UnknownField:
    """A key ``loc`` that no model at that place declares."""

    loc: tuple[str | int, ...]
    known: tuple[str, ...]

    @property
    def path(self) -> str:
        """The dotted path of the key, e.g. ``llm.modle``."""
        return ".".join(str(part) for part in self.loc)

    def message(self) -> str:
        """``unknown field 'max_ticker' (did you mean 'max_tickers'?)``, or the fields there
        are when no name is close."""
        name = str(self.loc[-1])
        near = difflib.get_close_matches(name, self.known, n=1, cutoff=_CLOSE_ENOUGH)
        parent = ".".join(str(part) for part in self.loc[:-1])
        where = f"{parent}." if parent else ""
        if near:
            return f"unknown field {self.path!r} (did you mean {where + near[0]!r}?)"
        return f"unknown field {self.path!r} (the fields are: {', '.join(self.known)})"


def _walked(model: type[BaseModel]) -> bool:
    """Whether ``model``'s raw keys are its fields (see the module docstring)."""
    if "extra" in model.model_config:
        return False
    validators = model.__pydantic_decorators__.model_validators.values()
    return not any(v.info.mode in ("before", "wrap") for v in validators)


def _names(model: type[BaseModel]) -> dict[str, Any]:
    """Each key ``model`` accepts (field name and alias), with the field's annotation."""
    names: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        names[name] = field.annotation
        if field.alias:
            names[field.alias] = field.annotation
    return names


def _own_first(model: type[BaseModel]) -> list[str]:
    """``model``'s field names, its own before those its bases share with every model of
    their kind (a flow's ``symbol`` before every flow's ``budget_usd``)."""
    inherited = {
        name
        for base in model.__mro__[1:]
        if isinstance(base, type) and issubclass(base, BaseModel)
        for name in base.model_fields
    }
    names = list(model.model_fields)
    return [n for n in names if n not in inherited] + [n for n in names if n in inherited]


def _members(annotation: Any) -> list[Any]:
    """The alternatives of a union (``X | None``), or the annotation itself."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _members(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [m for arg in typing.get_args(annotation) for m in _members(arg)]
    return [annotation]


def _in_value(annotation: Any, value: Any, loc: tuple[str | int, ...]) -> list[UnknownField]:
    found: list[UnknownField] = []
    models: list[type[BaseModel]] = []
    for member in _members(annotation):
        origin, args = typing.get_origin(member), typing.get_args(member)
        if isinstance(member, type) and issubclass(member, BaseModel):
            models.append(member)
        elif origin in (list, tuple, set, frozenset, Sequence) and isinstance(value, list):
            for index, item in enumerate(value):
                found += _in_value(args[0] if args else Any, item, (*loc, index))
        elif origin in (dict, Mapping) and len(args) == 2 and isinstance(value, dict):
            for key, item in value.items():
                found += _in_value(args[1], item, (*loc, key))
    if models and isinstance(value, dict):
        found += _in_models(models, value, loc)
    return found


def _in_models(
    models: list[type[BaseModel]], value: dict[str, Any], loc: tuple[str | int, ...]
) -> list[UnknownField]:
    if not all(_walked(model) for model in models):
        return []
    known: dict[str, Any] = {}
    for model in reversed(models):
        known.update(_names(model))
    found: list[UnknownField] = []
    for key, item in value.items():
        if key in known:
            found += _in_value(known[key], item, (*loc, key))
        else:
            fields = (name for model in models for name in _own_first(model))
            found.append(UnknownField((*loc, key), tuple(dict.fromkeys(fields))))
    return found


def unknown_fields(model: type[BaseModel], data: Any) -> list[UnknownField]:
    """Every key of the raw ``data`` (a JSON-like value) that ``model`` does not know."""
    return _in_models([model], data, ()) if isinstance(data, dict) else []


def unknown_fields_error(model: type[BaseModel], unknown: list[UnknownField]) -> ValidationError:
    """``unknown`` as pydantic's ``ValidationError``, so every door tells it as it tells any
    other bad field."""
    details = [
        InitErrorDetails(
            type=PydanticCustomError(UNKNOWN_FIELD, "{message}", {"message": item.message()}),
            loc=item.loc,
            input=None,
        )
        for item in unknown
    ]
    return ValidationError.from_exception_data(model.__name__, details)
