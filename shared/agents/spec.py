"""One ``AgentSpec`` per agent: everything about an agent in one row, every table derived from it.

An agent is its name, its LLM role, the typed inputs its prompt is built from, the
schema it answers in (or None for prose), who it is and what it is asked (title and
brief), the tools it is offered, whether it may raise a critical abort, the heading
its report appears under, the builder that writes its prompt, and its offline rule:
the deterministic analyst that answers from the same typed inputs without a model.
The registry (``AGENT_SPECS``) holds every registered spec by name; each flow's tables
(``AGENTS``, ``ANALYST_AGENTS``, headings, briefs...) are live views over it
(``SpecTable``), so adding an agent is adding its spec, and nothing can drift.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypedDict, TypeVar, Unpack

from pydantic import BaseModel, ValidationError

from shared.errors import InvalidInput, lookup
from shared.llm.contracts import ChatMessage
from shared.llm.providers import LlmRole

if TYPE_CHECKING:
    # Only a type here: the offline package imports this registry to dispatch on it.
    from shared.llm.offline.reading import OfflineInput

InputsT = TypeVar("InputsT", bound=BaseModel)
OutputT = TypeVar("OutputT", bound=BaseModel)
K = TypeVar("K")
V = TypeVar("V")


class Prose(BaseModel):
    """What an agent that answers in prose (``output`` None) writes offline: its text."""

    text: str


def prose_text(answer: Prose) -> str:
    """The text of a prose answer (the ``as_text`` of an agent without a schema)."""
    return answer.text


@dataclass(frozen=True)
class AgentSpec(Generic[InputsT, OutputT]):
    """One agent, complete: what a workflow, a prompt, the offline engine and the docs need.

    ``prompt(spec, inputs)`` renders the messages (one builder per kind of agent, the
    spec its parameters); ``offline(spec, inputs, seen)`` answers as the offline
    provider, from the same inputs and the tool results ``seen`` so far.
    """

    name: str
    group: str
    """The kind of agent within its flow (``pipeline.analyst``, ``pipeline.debater``...):
    the flow's tables select their rows by it."""
    llm_role: LlmRole
    inputs: type[InputsT]
    output: type[OutputT] | None
    title: str
    """Who the agent is, as its system prompt says: "the bull researcher"."""
    brief: str
    """What it is asked to do, in the prompt's own words (an analyst's focus, a debater's goal)."""
    prompt: Callable[[AgentSpec[InputsT, OutputT], InputsT], list[ChatMessage]]
    offline: Callable[[AgentSpec[InputsT, OutputT], InputsT, OfflineInput], OutputT]
    as_text: Callable[[OutputT], str]
    """The answer as prose, for a request that asks for no schema."""
    key: str = ""
    """The agent's key in its group's table: an analyst's kind, a debater's speaker."""
    tools: tuple[str, ...] = ()
    may_abort: bool = False
    """Whether its report may raise a critical abort that skips the debates."""
    heading: str = ""
    """The heading its report appears under in later prompts and the run report."""
    needs: tuple[str, ...] = ()
    """Input fields it decides from, which must be given."""
    refuses: tuple[str, ...] = ()
    """Input fields it decides before they exist, which must not be given."""

    @property
    def schema(self) -> type[OutputT]:
        """The output schema (an agent answering in prose has none to validate)."""
        if self.output is None:
            raise InvalidInput("response_schema", f"{self.name} answers in prose, with no schema")
        return self.output

    @property
    def schema_name(self) -> str | None:
        """The ``response_schema`` of its requests: the output model's registered name."""
        return None if self.output is None else self.output.__name__

    def read(self, raw: Mapping[str, Any] | InputsT) -> InputsT:
        """``raw`` validated as this agent's inputs; a clear error names the agent and field."""
        if isinstance(raw, self.inputs):
            return raw
        try:
            return self.inputs.model_validate(raw)
        except ValidationError as error:
            raise InvalidInput(
                "inputs",
                f"{self.name} reads {self.inputs.__name__}, and these do not validate: {error}",
                fix=f"Send {self.name} its {self.inputs.__name__}, serialized.",
            ) from None

    def messages(self, inputs: Mapping[str, Any] | InputsT) -> list[ChatMessage]:
        """The system and user messages of a call with ``inputs``."""
        return self.prompt(self, self.read(inputs))

    def answer_offline(self, inputs: Mapping[str, Any] | InputsT, seen: OfflineInput) -> OutputT:
        """What the offline provider answers for ``inputs`` after the tool results ``seen``."""
        return self.offline(self, self.read(inputs), seen)


class SpecDetails(TypedDict, total=False):
    """What an agent may add to its family's values (see ``AgentSpec``)."""

    key: str
    tools: tuple[str, ...]
    may_abort: bool
    heading: str
    needs: tuple[str, ...]
    refuses: tuple[str, ...]


@dataclass(frozen=True)
class AgentFamily(Generic[InputsT]):
    """What every agent of one kind shares: its group, model role, inputs and prompt
    builder (the Pipeline's analysts, its debaters, its managers...). Each member is then
    declared by what sets it apart (``spec``), so the shared values are written once."""

    group: str
    llm_role: LlmRole
    inputs: type[InputsT]
    prompt: Callable[[AgentSpec[InputsT, Any], InputsT], list[ChatMessage]]

    def spec(
        self,
        name: str,
        title: str,
        brief: str,
        *,
        output: type[OutputT] | None,
        offline: Callable[[AgentSpec[InputsT, OutputT], InputsT, OfflineInput], OutputT],
        as_text: Callable[[OutputT], str],
        **details: Unpack[SpecDetails],
    ) -> AgentSpec[InputsT, OutputT]:
        """The member ``name``: who it is (``title``), what it is asked (``brief``), how it
        answers (its schema, offline rule and prose view) and its ``details``."""
        family = (self.group, self.llm_role, self.inputs)
        return AgentSpec(
            name, *family, output, title, brief, self.prompt, offline, as_text, **details
        )


def from_inputs(
    rule: Callable[[InputsT], OutputT],
) -> Callable[[AgentSpec[InputsT, OutputT], InputsT, OfflineInput], OutputT]:
    """``rule`` as an offline rule: for an agent without tools, whose answer follows from its
    typed inputs alone."""

    def offline(spec: AgentSpec[InputsT, OutputT], inputs: InputsT, seen: OfflineInput) -> OutputT:
        return rule(inputs)

    return offline


AGENT_SPECS: dict[str, AgentSpec[Any, Any]] = {}
"""Every registered agent, by name, in registration order."""


def register_agent(spec: AgentSpec[InputsT, OutputT]) -> AgentSpec[InputsT, OutputT]:
    """Add ``spec`` to the registry (and so to every table derived from it)."""
    if spec.name in AGENT_SPECS:
        raise InvalidInput("name", f"an agent named {spec.name!r} is already registered")
    AGENT_SPECS[spec.name] = spec
    return spec


def unregister_agent(name: str) -> None:
    """Take an agent out of the registry (a test's extra agent, when the test is done)."""
    AGENT_SPECS.pop(name, None)


def agent_spec(name: str) -> AgentSpec[Any, Any]:
    """The spec of the agent ``name``, or an error listing every known agent."""
    return lookup(AGENT_SPECS, name, field="agent", what="agent")


class SpecTable(Mapping[K, V]):
    """A table derived from the registry: a row per spec of ``groups``, read live, so an
    agent registered (or removed) later is in it (or gone) everywhere at once."""

    def __init__(
        self,
        groups: tuple[str, ...],
        key: Callable[[AgentSpec[Any, Any]], K],
        value: Callable[[AgentSpec[Any, Any]], V],
    ) -> None:
        self._groups = groups
        self._key = key
        self._value = value

    def _rows(self) -> dict[K, V]:
        return {
            self._key(spec): self._value(spec)
            for spec in AGENT_SPECS.values()
            if spec.group in self._groups
        }

    def __getitem__(self, key: K) -> V:
        return self._rows()[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._rows())

    def __len__(self) -> int:
        return len(self._rows())

    def __repr__(self) -> str:
        return f"SpecTable({self._rows()!r})"


def specs_by_name(*groups: str) -> SpecTable[str, AgentSpec[Any, Any]]:
    """Every agent of ``groups``, by name: its spec (a flow's ``AGENTS``)."""
    return SpecTable(groups, lambda spec: spec.name, lambda spec: spec)


def by_key(
    group: str, kind: Callable[[str], K], value: Callable[[AgentSpec[Any, Any]], V]
) -> SpecTable[K, V]:
    """``value`` of each agent of ``group``, by its key read as ``kind`` (an analyst's
    kind, a debater's speaker)."""
    return SpecTable((group,), lambda spec: kind(spec.key), value)


def specs_by_key(group: str, kind: Callable[[str], K]) -> SpecTable[K, AgentSpec[Any, Any]]:
    """Each agent of ``group``, by its key read as ``kind``: its spec."""
    return by_key(group, kind, lambda spec: spec)
