"""What every data tool shares: the fixed ``as_of``, reads through the router, the answer's frame.

A data tool is a typed function ``(arguments, reader) -> value``: its name is the
tool's name, its docstring the description the model reads, and its arguments
model (a subclass of ``AsOfArguments``, with field descriptions and bounds) the
schema. ``as_of`` is a context field: the workflow sets it, the model never sees
or moves it, and every read goes through a ``DataReader`` bound to it.

The reader turns the router's outcomes into what the model should read: an
answer names its vendor and says plainly when the data is simulated; "no data in
the window" becomes a plain sentence (``NoData``, an answer); a kind no vendor
is configured for becomes ``NotConfigured`` (an error result); throttled or
broken vendors propagate so Temporal retries.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Any, TypeVar

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import to_jsonable_python

from shared.data.contracts import DataKind, DataVendor
from shared.data.router import DataRouter
from shared.errors import NoData, NotConfigured
from shared.tools.registry import Tool, ToolOutput, ToolServices, register_tool

T = TypeVar("T")
A = TypeVar("A", bound="AsOfArguments")

SIMULATED_VENDORS = frozenset({"sim"})
"""Vendors whose every answer is generated; bars carry no ``simulated`` flag of their own."""

SIMULATED_NOTE = (
    "SIMULATED DATA from quantdesk's synthetic market: not real prices, news or filings. "
    "Say so wherever you use it."
)

Symbol = Annotated[
    str,
    StringConstraints(
        strip_whitespace=True,
        to_upper=True,
        min_length=1,
        max_length=15,
        pattern=r"^[A-Za-z0-9.^=-]+$",
    ),
    Field(description="ticker, e.g. AAPL (indices start with ^, e.g. ^GSPC)"),
]


class AsOfArguments(BaseModel):
    """The argument every data tool has: the analysis time, fixed by the workflow."""

    model_config = ConfigDict(extra="forbid")

    as_of: AwareDatetime = Field(
        description="the analysis time: nothing published after it is read; fixed by the workflow"
    )


class DataReader:
    """Reads through the router as of one time, remembering which vendors answered."""

    def __init__(self, router: DataRouter, as_of: datetime) -> None:
        self.router = router
        self.as_of = as_of
        self.vendors: set[str] = set()
        self.simulated = False

    def read(
        self,
        kind: DataKind,
        read: Callable[[DataVendor], T],
        *,
        subject: str | None = None,
        window: str | None = None,
    ) -> T:
        """``read`` on the first vendor of ``kind``'s chain that answers.

        ``subject`` (a symbol, a sector) and ``window`` ("7 days") only word the
        "no data" answer: "no news data for ACME in the window (7 days up to ...)".
        """
        unconfigured: set[int] = set()

        def attempt(vendor: DataVendor) -> T:
            try:
                return read(vendor)
            except NotConfigured:
                unconfigured.add(id(vendor))
                raise

        try:
            routed = self.router.call(kind, attempt)
        except NoData as error:
            if self._none_configured(kind, unconfigured):
                raise NotConfigured(
                    f"no vendor is configured for {kind.value} data ({error})",
                    fix="Configure a vendor of this kind or route the kind to one in data_routes.",
                ) from None
            about = f" for {subject}" if subject else ""
            as_of = self.as_of.isoformat()
            span = f"in the window ({window} up to {as_of})" if window else f"as of {as_of}"
            raise NoData(f"no {kind.value} data{about} {span}: {error}") from None
        self.vendors.add(routed.vendor)
        self.simulated |= routed.vendor in SIMULATED_VENDORS or _flagged(routed.value)
        return routed.value

    def _none_configured(self, kind: DataKind, unconfigured: set[int]) -> bool:
        """Whether every vendor of the chain either does not serve ``kind`` or lacks its setup."""
        chain = [self.router.vendors.get(name) for name in self.router.routes.get(kind, ())]
        return all(v is None or kind not in v.kinds or id(v) in unconfigured for v in chain)

    def answer(self, value: object) -> ToolOutput:
        """``value`` framed with as_of, vendor and the simulated mark, for the model."""
        vendor = "+".join(sorted(self.vendors)) or None
        frame: dict[str, Any] = {
            "as_of": self.as_of.isoformat(),
            "vendor": vendor,
            "simulated": self.simulated,
            **({"note": SIMULATED_NOTE} if self.simulated else {}),
            "data": to_jsonable_python(value),
        }
        return ToolOutput(frame, vendor=vendor)


def _flagged(value: object) -> bool:
    """Whether a record in ``value`` says it was generated by the sim market."""
    if isinstance(value, list | tuple):
        return any(_flagged(item) for item in value)
    return bool(getattr(value, "simulated", False))


def register_data_tool(
    name: str, description: str, arguments: type[A], run: Callable[[A, DataReader], object]
) -> Tool:
    """Register ``run`` as the data tool ``name``, reading as of the call's fixed ``as_of``."""

    def answer(args: A, services: ToolServices) -> ToolOutput:
        reader = DataReader(services.router, args.as_of)
        return reader.answer(run(args, reader))

    return register_tool(
        Tool(
            name=name,
            description=description,
            arguments=arguments,
            run=answer,
            uses_services=True,
            context_fields=frozenset({"as_of"}),
        )
    )


def data_tool(
    arguments: type[A],
) -> Callable[[Callable[[A, DataReader], T]], Callable[[A, DataReader], T]]:
    """Register the decorated function as a data tool named after it, described by its docstring."""

    def register(run: Callable[[A, DataReader], T]) -> Callable[[A, DataReader], T]:
        description = " ".join((inspect.getdoc(run) or run.__name__).split())
        register_data_tool(run.__name__, description, arguments, run)
        return run

    return register
