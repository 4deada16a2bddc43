"""The Pipeline's analyst kinds: an open set, one kind per registered analyst spec.

``AnalystKind`` reads like the enum it replaces (``AnalystKind.MARKET``, ``kind.value``,
``for kind in AnalystKind``, ``kind is AnalystKind.NEWS``), but its members are the
analysts whose specs are registered, in registration order: adding an analyst is
adding its spec, with no enum, field or table to edit. A kind no spec registered is
refused wherever it is read (run inputs, reports), naming the known ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Set
from typing import Any, ClassVar

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

from shared.agents.spec import AGENT_SPECS

ANALYST_GROUP = "pipeline.analyst"
"""The spec group of the Pipeline's analysts: each one's ``key`` is its kind."""


def _registered(*, aborting: bool = False) -> dict[str, AnalystKind]:
    """The kinds of the registered analyst specs (those that may abort), in their order."""
    return {
        spec.key: AnalystKind.named(spec.key)
        for spec in AGENT_SPECS.values()
        if spec.group == ANALYST_GROUP and (spec.may_abort or not aborting)
    }


class _Kinds(type):
    """Iterating, sizing and testing the class itself walk the registered kinds."""

    def __iter__(cls) -> Iterator[AnalystKind]:
        return iter(list(_registered().values()))

    def __len__(cls) -> int:
        return len(_registered())

    def __contains__(cls, value: object) -> bool:
        return value in _registered()


class AnalystKind(str, metaclass=_Kinds):
    """One analyst of the Pipeline, by the kind of data it reads (its spec's ``key``)."""

    interned: ClassVar[dict[str, AnalystKind]] = {}

    MARKET: ClassVar[AnalystKind]
    SOCIAL: ClassVar[AnalystKind]
    NEWS: ClassVar[AnalystKind]
    FUNDAMENTALS: ClassVar[AnalystKind]

    def __new__(cls, value: str) -> AnalystKind:
        registered = _registered()
        known = registered.get(value)
        if known is None:
            names = ", ".join(registered) or "none registered"
            raise ValueError(f"unknown analyst {value!r}; the analysts are: {names}")
        return known

    @classmethod
    def named(cls, value: str) -> AnalystKind:
        """The one instance of kind ``value``, registered or not (``is`` compares kinds)."""
        if value not in cls.interned:
            cls.interned[value] = str.__new__(cls, value)
        return cls.interned[value]

    @property
    def value(self) -> str:
        """The kind's name, as in run inputs and JSON."""
        return str.__str__(self)

    def __repr__(self) -> str:
        return f"AnalystKind({self.value!r})"

    def __str__(self) -> str:
        return self.value

    def __reduce__(self) -> tuple[Any, ...]:
        return (AnalystKind.named, (self.value,))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_after_validator_function(
            cls,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(str, when_used="always"),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "enum": list(_registered())}


for _name in ("market", "social", "news", "fundamentals"):
    setattr(AnalystKind, _name.upper(), AnalystKind.named(_name))


class _AbortAnalysts(Set[AnalystKind]):
    """The analysts who may raise a critical abort: those whose spec says ``may_abort``."""

    def __contains__(self, value: object) -> bool:
        return value in _registered(aborting=True)

    def __iter__(self) -> Iterator[AnalystKind]:
        return iter(list(_registered(aborting=True).values()))

    def __len__(self) -> int:
        return len(_registered(aborting=True))


ABORT_ANALYSTS: Set[AnalystKind] = _AbortAnalysts()
"""The analysts who may raise a critical abort: a price collapse and a failing balance sheet
are facts they read; news tone and social chatter are not grounds to skip the debate."""
