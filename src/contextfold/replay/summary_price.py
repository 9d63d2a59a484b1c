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

Which cache the summarizer call may read is the one choice between two
figures:

* **its own** (:data:`OWN_CACHE`, ``cost_llm_usd``): it reads only what the
  previous summarizer call left, so nearly all of it is written anew. This
  is the reference scorer's ``--price-summaries`` rule, an upper bound for a
  summarizer that sends a prompt of its own.
* **the agent's** (:data:`AGENT_CACHE`, ``cost_live_usd``): it reads the
  replaced request from the agent's cache, as contextfold's cache-riding
  :class:`~contextfold.summarizers.llm.ModelSummarizer` does (it sends the
  agent's own next request plus its instruction), and writes only what
  came since the replaced request and the instruction: what the live path
  pays.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from ..pipeline.base import Prices
from ..summarizers.prompts import STRUCTURED, riding_instruction
from .cost import Prompt, PromptCache, cost_usd

T = TypeVar("T")

INSTRUCTION = {"role": "user", "content": "Summarize the conversation"}
"""The message that ends the priced summarizer call."""

LIVE_INSTRUCTION = {"role": "user", "content": riding_instruction(STRUCTURED, 2_000, None, 1, 0, history_tools=True)}
"""The message that ends the live path's summarizer call, as :class:`~contextfold.summarizers.llm.ModelSummarizer`
words it by default (its length is what matters: it is written to the cache)."""

OWN_CACHE, AGENT_CACHE = "own", "agent"
"""Which cache a priced summarizer call reads (see the module docstring)."""


class SummaryPricer(Generic[T]):
    """Prices, request by request, the summaries each agent request brings (see the module docstring).

    ``instruction`` is the message that ends the call as the caller's
    messages are (a rendered message, a key), counted ``instruction_tokens``.
    ``reads`` is :data:`OWN_CACHE` (``cache`` holds the previous summarizer
    call) or :data:`AGENT_CACHE` (the call reads what the replaced agent
    request left; ``cache`` only lends its rule and TTL).
    """

    def __init__(self, prices: Prices, cache: PromptCache[T], instruction: T, instruction_tokens: int,
                 reads: str = OWN_CACHE) -> None:
        if reads not in (OWN_CACHE, AGENT_CACHE):
            raise ValueError(f"reads {reads!r}: expected {OWN_CACHE!r} or {AGENT_CACHE!r}")
        self.prices = prices
        self.cache = cache
        self.reads = reads
        self.instruction = instruction
        self.instruction_tokens = instruction_tokens

    def price(self, replaced: Prompt[T] | None, summary_tokens: Sequence[int], time_s: float | None,
              since: Sequence[tuple[T, int]] = ()) -> float:
        """USD for writing summaries of ``summary_tokens`` tokens at ``time_s`` in place of the ``replaced`` request.

        ``since`` are the messages (with their tokens) that came after the
        replaced request and go into the call before the instruction.
        Nothing when there is no summary, or no earlier request to summarize.
        """
        if not summary_tokens or replaced is None:
            return 0.0
        prompt = Prompt(replaced.tools, replaced.tools_tokens,
                        [*replaced.messages, *(m for m, _ in since), self.instruction],
                        [*replaced.tokens, *(n for _, n in since), self.instruction_tokens], time_s)
        read = self.cache.read(prompt) if self.reads == OWN_CACHE else self.cache.served(replaced, prompt)
        return cost_usd(self.prices, cache_read=read, cache_write=prompt.input_tokens - read, output=sum(summary_tokens))


class BothRules(Generic[T]):
    """The summaries priced by both rules: the reference scorer's (:data:`OWN_CACHE`) and the live path's (:data:`AGENT_CACHE`).

    The reference scorer's call is the replaced request and :data:`INSTRUCTION`.
    The live path's is what contextfold's cache-riding summarizer sends: the
    agent's next request (the replaced one and the messages since) and
    :data:`LIVE_INSTRUCTION`. ``cache`` makes an empty cache of the caller's
    rule and TTL; ``message`` renders and counts a Chat Completions message
    the caller's way.
    """

    def __init__(self, prices: Prices, cache: Callable[[], PromptCache[T]],
                 message: Callable[[Mapping[str, Any]], tuple[T, int]]) -> None:
        self.own = SummaryPricer(prices, cache(), *message(INSTRUCTION), OWN_CACHE)
        self.live = SummaryPricer(prices, cache(), *message(LIVE_INSTRUCTION), AGENT_CACHE)

    def price(self, replaced: Prompt[T] | None, summary_tokens: Sequence[int], time_s: float | None,
              since: Sequence[tuple[T, int]]) -> tuple[float, float]:
        """USD by the reference scorer's rule and as the live path pays (see :meth:`SummaryPricer.price`)."""
        return (self.own.price(replaced, summary_tokens, time_s),
                self.live.price(replaced, summary_tokens, time_s, since))
