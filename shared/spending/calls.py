"""What a model call could cost before it is made: the ``chat`` step reserves this much.

An upper bound, not a guess of the mean: the prompt as the context window is measured
(``shared.llm.prompt_budget``), each image at a vision model's usual charge, and the whole
reply reserve (``max_tokens``). A call is stopped when this bound could pass a limit, so a
limit is never passed by more than the estimate's own error on the prompt.
"""

from __future__ import annotations

from shared.llm.contracts import ChatRequest
from shared.llm.pricing import ModelPrice
from shared.llm.prompt_budget import estimated_tokens
from shared.spending.ledger import Spend

IMAGE_TOKENS = 1_600
"""What one chart image costs in prompt tokens, at most (a 1024-pixel image is 765 tokens at
OpenAI's high detail and about 1,600 at Anthropic's)."""


def call_estimate(request: ChatRequest, reply_tokens: int, price: ModelPrice | None) -> Spend:
    """The most ``request`` should cost with a reply of up to ``reply_tokens``."""
    images = sum(len(message.images) for message in request.messages)
    prompt = estimated_tokens(request.messages, request.tools) + IMAGE_TOKENS * images
    usd = price.cost(prompt, reply_tokens) if price is not None else 0.0
    return Spend(usd=usd, tokens=prompt + reply_tokens)
