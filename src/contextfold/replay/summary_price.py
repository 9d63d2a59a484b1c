"""What a summary would have cost had an LLM written it.

The replay's strategies write their summaries offline (the extractive
summarizer) and so pay nothing for them, while a peer that summarizes with a
model pays for every summary. For an honest comparison each summary is also
priced as one LLM summarizer call: its input is the request it replaces (the
previous agent request, then an instruction to summarize), prompt-cached the
way any request of its kind is (against the previous such call, within the
cache's time to live); its output is the summary's tokens at the output
price. A step whose summaries came with summarizer requests of their own (an
LLM summarizer was configured) has paid already and is not priced again.
The reference scorer's ``--price-summaries`` follows the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from ..pipeline.base import Prices
from .cost import Prompt, PromptCache, cost_usd

T = TypeVar("T")

INSTRUCTION = {"role": "user", "content": "Summarize the conversation"}
"""The message that ends the priced summarizer call."""


class SummaryPricer(Generic[T]):
    """Prices, request by request, the summaries each agent request brings (see the module docstring).

    ``instruction`` is :data:`INSTRUCTION` as the caller's messages are (a
    rendered message, a key), counted ``instruction_tokens``.
    """

    def __init__(self, prices: Prices, cache: PromptCache[T], instruction: T, instruction_tokens: int) -> None:
        self.prices = prices
        self.cache = cache
        self.instruction = instruction
        self.instruction_tokens = instruction_tokens

    def price(self, replaced: Prompt[T] | None, summary_tokens: Sequence[int], time_s: float | None) -> float:
        """USD for writing summaries of ``summary_tokens`` tokens at ``time_s`` in place of the ``replaced`` request.

        Nothing when there is no summary, or no earlier request to summarize.
        """
        if not summary_tokens or replaced is None:
            return 0.0
        prompt = Prompt(replaced.tools, replaced.tools_tokens, [*replaced.messages, self.instruction],
                        [*replaced.tokens, self.instruction_tokens], time_s)
        read = self.cache.read(prompt)
        return cost_usd(self.prices, cache_read=read, cache_write=prompt.input_tokens - read, output=sum(summary_tokens))
