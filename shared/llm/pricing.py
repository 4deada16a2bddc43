"""What tokens cost: a price per model, so usage can be shown in dollars as a run goes.

The chat activity prices each reply with its worker's table (the model a call used is
only known there), and the cost travels in ``Usage`` with the tokens, so progress,
results and reports add it up like any other count. Prices are list prices in USD per
million tokens at the time of writing; vendors change them, so the table is a setting
(``QUANTDESK_PRICES='{"gpt-4.1": {"input": 2, "output": 8}}'``, merged over the list
prices each provider row carries, ``shared.llm.providers.list_prices``).
A model with no price costs 0 and is reported as unpriced rather than guessed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

PER_TOKENS = 1_000_000


class ModelPrice(BaseModel):
    """USD per million input and output tokens."""

    model_config = ConfigDict(frozen=True)

    input: float = Field(ge=0, description="USD per million prompt tokens")
    output: float = Field(ge=0, description="USD per million completion tokens")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The USD cost of one call's tokens."""
        return (input_tokens * self.input + output_tokens * self.output) / PER_TOKENS
