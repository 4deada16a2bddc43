"""Steps a run went on without: which one, why, and where its unusable reply is kept.

A model that will not answer in the shape asked for, even after the repair turns,
costs the run that step, not the run. Where the graph can do without the step (an
analyst's report, a scanner's report) the run records a ``MissingStep`` and every
later prompt and report names it, so no agent and no reader mistakes an absent
report for a quiet one. Steps nothing can replace park or fail instead
(``workflows.resume``).
"""

from __future__ import annotations

from pydantic import BaseModel, Field


class MissingStep(BaseModel):
    """One step whose output the run does not have."""

    step: str = Field(min_length=1, description="the agent whose output is missing")
    reason: str = Field(
        min_length=1, description="why: the schema and the problems its last reply still had"
    )
    raw_reply_key: str | None = Field(
        None, description="s3://bucket/key of the last unusable reply, for a person to read"
    )

    def describe(self) -> str:
        """The absence in a sentence, for prompts and reports."""
        kept = f" Its raw reply is kept at `{self.raw_reply_key}`." if self.raw_reply_key else ""
        return f"MISSING: {self.step} gave no usable output ({self.reason}).{kept}"


MISSING_NOTE = (
    "Decide from what is given; do not guess what a missing report would have said, and say "
    "where its absence limits your conclusion."
)
"""What every agent reading around a missing report is told to do about it."""


def missing_section(missing: list[MissingStep]) -> str:
    """The Markdown lines naming each missing step, then what to do about them; empty if none."""
    if not missing:
        return ""
    return "\n".join([*(f"- {step.describe()}" for step in missing), MISSING_NOTE])
