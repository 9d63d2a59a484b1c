"""The anchored counter: the provider's reported prompt size plus a calibrated estimate of what was added since.

No provider's tokenizer for Claude, DeepSeek or Gemini is public, so
anchoring on what the provider reported is what makes the count right to a
few percent for every model.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from ..conversation import Conversation, Header, Item
from ..errors import ContextfoldError, UsageMismatch
from ..usage import Usage
from .estimator import Estimator


log = logging.getLogger(__name__)

MISMATCH_FACTOR = 5.0
"""How many times the first reported prompt size may fall short of the estimate before :class:`UsageMismatch` says
so. Only short: a figure far *above* the count is what a request hides from contextfold (a recorded session's
system prompt and tool definitions, 19,800 reported tokens for 57 visible in the corpus), not a misread."""
MISMATCH_FLOOR = 1024
"""Tokens the two figures must also differ by, so that a tiny request's rounding is no warning."""


def check_first_usage(reported: int, estimated: int) -> None:
    """Warn (a :class:`UsageMismatch` and one log line) when the first reported prompt size is under
    1/:data:`MISMATCH_FACTOR` of the count: the provider read fewer tokens than the request visibly holds, which a
    right ``read_usage`` never gives, and the anchor would make every later count short (an overflow)."""
    if estimated - reported > MISMATCH_FLOOR and estimated > MISMATCH_FACTOR * max(reported, 1):
        mismatch = UsageMismatch(reported, estimated)
        log.warning("%s", mismatch)
        warnings.warn(mismatch, stacklevel=3)


@dataclass(frozen=True)
class _Anchor:
    """The last request the provider reported on: what it held and what it cost."""

    header: Header
    items: tuple[Item, ...]
    reported: int  # the provider's prompt tokens
    estimated: int  # the estimator's tokens for the same request

    @cached_property
    def ids(self) -> frozenset[str]:
        """The ids of the items the provider has read (a cleared output keeps its id: it only shrank)."""
        return frozenset(item.id for item in self.items)


class TokenCounter:
    """Counts requests anchored on the provider's reported usage.

    The count of a request that extends the last reported one (same header,
    the same items first) is the reported figure plus ``ratio`` times the
    estimate of the items added since. ``ratio`` is learnt from how earlier
    estimates of added items compared with the real growth of the prompt: a
    decayed ratio of sums, so large additions weigh more than small noisy
    ones, each observation clamped to a factor of :attr:`max_step` of the
    current value (an outlier moves it a little, not a lot), starting from
    1.0 with the weight of :attr:`prior_tokens` estimated tokens (a first odd
    observation cannot swing it).

    A request that does not extend the anchor (the conversation was compacted
    or the header changed) is counted from the full estimate, as the larger of
    two calibrations of the last anchor: ``offset + ratio * estimate`` (the
    provider's fixed overhead that we cannot see stays fixed) and
    ``reported / estimated * estimate`` (everything scales). Counting short
    risks a request the provider rejects, so the larger one is used.
    """

    def __init__(
        self,
        estimator: Estimator | None = None,
        *,
        decay: float = 0.85,
        prior_tokens: float = 500.0,
        max_step: float = 1.5,
    ) -> None:
        self.estimator = estimator or Estimator()
        self.decay = decay
        self.prior_tokens = prior_tokens
        self.max_step = max_step
        self._real_growth = prior_tokens  # decayed sums behind ``ratio``
        self._estimated_growth = prior_tokens
        self._anchor: _Anchor | None = None
        self._last_request: tuple[Header, tuple[Item, ...]] | None = None

    @property
    def ratio(self) -> float:
        """Real tokens per estimated token for content added to a conversation."""
        return self._real_growth / self._estimated_growth

    @property
    def anchored(self) -> bool:
        """Whether a usage has been recorded (counts are anchored from then on)."""
        return self._anchor is not None

    def new_items(self, conversation: Conversation) -> Sequence[Item] | None:
        """The items added since the last recorded usage, or ``None`` if the anchor no longer applies.

        It applies when the header is the same and the conversation starts with
        exactly the items of the anchored request (same objects, or equal ones:
        a cleared tool result keeps its id but not its content).
        """
        return self._added_since_anchor(conversation.header, conversation.items)

    def _added_since_anchor(self, header: Header, items: Sequence[Item]) -> Sequence[Item] | None:
        anchor = self._anchor
        if anchor is None:
            return None
        held = len(anchor.items)
        if len(items) < held or not (header is anchor.header or header == anchor.header):
            return None
        if list(items[:held]) != list(anchor.items):
            return None
        return items[held:]

    def count(self, conversation: Conversation) -> int:
        """Tokens of the request ``conversation`` would make, anchored where possible."""
        self._last_request = (conversation.header, tuple(conversation.items))
        return self._count(conversation)

    def estimated_tokens(self, conversation: Conversation) -> int:
        """How many of :meth:`count`'s tokens are of text the provider has not reported on: the items it has not
        read (added since, or written by a compaction: a summary, files put back) and a header it has not read; all
        of them before any usage. What the provider read is calibrated by its report even when a compaction took
        items from between them; new text of another kind (a Markdown file after code) is what the estimate gets
        wrong, by a share of it (see :data:`contextfold.pipeline.stages.fit.ESTIMATE_SHORTFALL`)."""
        anchor = self._anchor
        if anchor is None:
            return self._count(conversation)
        unread = [item for item in conversation.items if item.id not in anchor.ids]
        header = conversation.header
        unread_header = 0 if header is anchor.header or header == anchor.header else self.estimator.header(header)
        return round(self.ratio * (self.estimator.items(unread) + unread_header))

    def _count(self, conversation: Conversation) -> int:
        anchor = self._anchor
        added = self.new_items(conversation)
        if anchor is None:
            return self.estimator.conversation(conversation)
        if added is not None:
            return anchor.reported + round(self.ratio * self.estimator.items(added))
        estimate = self.estimator.conversation(conversation)
        offset = anchor.reported - self.ratio * anchor.estimated
        scaled = anchor.reported / max(anchor.estimated, 1) * estimate
        return max(0, round(max(offset + self.ratio * estimate, scaled)))

    def record_usage(self, usage: Usage, conversation: Conversation | None = None) -> None:
        """Take the provider's figures for the request just sent.

        ``conversation`` is the request the usage belongs to; by default the
        one passed to the last :meth:`count`. A usage with no prompt figure
        (``prompt_tokens`` 0: the provider sent none) leaves the anchor as it was. The first figure is checked
        against the estimate (:func:`check_first_usage`): under a fifth of it, a :class:`UsageMismatch` warns.
        """
        if usage.prompt_tokens <= 0:
            return
        if conversation is not None:
            request = (conversation.header, tuple(conversation.items))
        elif self._last_request is not None:
            request = self._last_request
        else:
            raise ContextfoldError("record_usage needs the request it reports on: pass it, or count() it first")
        header, items = request
        anchor = self._anchor
        added = self._added_since_anchor(header, items)
        if anchor is not None and added is not None:
            estimated_growth = self.estimator.items(added)
            estimated = anchor.estimated + estimated_growth
            self._observe(usage.prompt_tokens - anchor.reported, estimated_growth)
        else:
            estimated = self.estimator.header(header) + self.estimator.items(items)
            if anchor is None:
                check_first_usage(usage.prompt_tokens, estimated)
        self._anchor = _Anchor(header, items, usage.prompt_tokens, estimated)

    def _observe(self, real_growth: int, estimated_growth: int) -> None:
        if estimated_growth <= 0:
            return
        ratio = self.ratio
        observed = min(max(real_growth / estimated_growth, ratio / self.max_step), ratio * self.max_step)
        self._real_growth = self.decay * self._real_growth + observed * estimated_growth
        self._estimated_growth = self.decay * self._estimated_growth + estimated_growth
