"""What tokens cost: a price per model, so usage can be shown in dollars as a run goes.

The chat activity prices each reply with its worker's table (the model a call used is
only known there), and the cost travels in ``Usage`` with the tokens, so progress,
results and reports add it up like any other count. Prices are list prices in USD per
million tokens at the time of writing; vendors change them, so the table is a setting
(``QUANTDESK_PRICES='{"gpt-4.1": {"input": 2, "output": 8}}'``, merged over these).
A model with no price costs 0 and is reported as unpriced rather than guessed.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from shared.llm.providers import OFFLINE_MODEL

PER_TOKENS = 1_000_000


class ModelPrice(BaseModel):
    """USD per million input and output tokens."""

    model_config = ConfigDict(frozen=True)

    input: float = Field(ge=0, description="USD per million prompt tokens")
    output: float = Field(ge=0, description="USD per million completion tokens")

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The USD cost of one call's tokens."""
        return (input_tokens * self.input + output_tokens * self.output) / PER_TOKENS


DEFAULT_PRICES: dict[str, ModelPrice] = {
    OFFLINE_MODEL: ModelPrice(input=0, output=0),
    "gpt-4.1": ModelPrice(input=2.0, output=8.0),
    "gpt-4.1-mini": ModelPrice(input=0.4, output=1.6),
    "gpt-4o": ModelPrice(input=2.5, output=10.0),
    "gpt-4o-mini": ModelPrice(input=0.15, output=0.6),
    "o4-mini": ModelPrice(input=1.1, output=4.4),
    "claude-sonnet-4-5": ModelPrice(input=3.0, output=15.0),
    "claude-haiku-4-5": ModelPrice(input=1.0, output=5.0),
    "claude-opus-4-1": ModelPrice(input=15.0, output=75.0),
    "deepseek-chat": ModelPrice(input=0.27, output=1.1),
    "deepseek-reasoner": ModelPrice(input=0.55, output=2.19),
    "openai/gpt-4.1": ModelPrice(input=2.0, output=8.0),
    "openai/gpt-4.1-mini": ModelPrice(input=0.4, output=1.6),
}
"""List prices (USD per million tokens); local models (ollama, vllm) are free to run."""
