"""What a run and every run below it share: its spending limits, its book and its language.

A person sets them once, on the run they start (``RunInput.budget_usd``, ``budget_tokens``,
``book``, ``language``); an AutoRun's Pipelines and a Pipeline's debates are bound by the
same. The worker's interceptor (``workflows.inputs.CheckRunInput``) reads them from the
run's input into a context variable at the start of ``run``, so every ``chat`` finds them
(``workflows.llm_calls``) without threading them through each signature, and writes them
into each child's input where the child's own are unset.

Spending is counted against the *root* run (the one a person started): its limit holds for
the whole tree, however many children spend at once (``shared.spending``).
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from pydantic import BaseModel, ConfigDict
from temporalio import workflow

from shared.llm.contracts import SpendScope

INHERITED = ("budget_usd", "budget_tokens", "language", "book")
"""The input fields a child takes from its parent when its own are unset."""


class RunTerms(BaseModel):
    """The terms of the running workflow's tree."""

    model_config = ConfigDict(frozen=True)

    root: str
    book: str | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    language: str | None = None

    def spend(self) -> SpendScope:
        """What a model call of this tree counts against."""
        return SpendScope(
            run=self.root,
            book=self.book,
            run_usd=self.budget_usd,
            run_tokens=self.budget_tokens,
        )


_TERMS: ContextVar[RunTerms | None] = ContextVar("quantdesk_run_terms", default=None)


def current_terms() -> RunTerms | None:
    """The running workflow's terms (None outside a workflow that took a ``RunInput``)."""
    return _TERMS.get()


def enter_terms(given: Any) -> None:
    """Read the terms of the run starting with input ``given`` (a ``RunInput``)."""
    info = workflow.info()
    root = info.root.workflow_id if info.root is not None else info.workflow_id
    book = getattr(given, "book", None) or _own_book(given)
    _TERMS.set(
        RunTerms(
            root=root,
            book=book,
            budget_usd=getattr(given, "budget_usd", None),
            budget_tokens=getattr(given, "budget_tokens", None),
            language=getattr(given, "language", None),
        )
    )


def _own_book(given: Any) -> str | None:
    """A Portfolio's or an AutoRun's book is its ``portfolio``."""
    portfolio = getattr(given, "portfolio", None)
    return portfolio if isinstance(portfolio, str) else None


def passed_down(child_input: Any) -> Any:
    """``child_input`` with the terms its own input leaves unset taken from this run's; a
    child of no ``RunInput`` (or under no terms) as it is."""
    terms = current_terms()
    fields = getattr(type(child_input), "model_fields", {})
    if terms is None or "budget_usd" not in fields:
        return child_input
    update = {
        name: getattr(terms, name)
        for name in INHERITED
        if getattr(child_input, name) is None and getattr(terms, name) is not None
    }
    return child_input.model_copy(update=update) if update else child_input
