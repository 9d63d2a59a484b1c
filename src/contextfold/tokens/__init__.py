"""Token accounting: estimating, exact counting, and anchoring on what the provider reported.

Four modules, each usable alone:

* :mod:`.text`: a *text counter* turns a string into tokens: :class:`HeuristicText`
  (no dependencies, tuned against o200k) or :class:`TiktokenText` (exact for
  OpenAI's ``o200k_base`` / ``cl100k_base``, loadable offline);
* :mod:`.estimator`: an :class:`Estimator` applies one text counter to a whole
  item or header, with rules for what is not text (images and documents,
  sized from their headers by :mod:`.media`; tool calls; the per-message
  framing) and keeps every item's count in ``Item.readings``;
* :mod:`.anchored`: a :class:`TokenCounter` anchors on real figures: after each
  response, :meth:`TokenCounter.record_usage` takes the provider's prompt size,
  and the next count is that figure plus a calibrated estimate of what was
  added since;
* :mod:`.accuracy`: how right that is on a recorded session, request by request.

All counts are in tokens of the model that will read the request, except
where a docstring says the unit is o200k tokens.
"""

from __future__ import annotations

from ..errors import TokenizerUnavailable
from .accuracy import RequestCheck, anchored_errors, error_summary, percentile
from .anchored import TokenCounter
from .estimator import NO_FRAMING, TOKENIZER_CHOICES, BlockCosts, Estimator, exact_estimator, named_estimator
from .text import (
    TOKENIZERS_DIR_ENV,
    CharRatioText,
    HeuristicText,
    TextCounter,
    TiktokenText,
    heuristic_tokens,
    load_encoding,
    tiktoken_cache_dir,
)

__all__ = [
    "NO_FRAMING",
    "TOKENIZERS_DIR_ENV",
    "TOKENIZER_CHOICES",
    "BlockCosts",
    "CharRatioText",
    "Estimator",
    "HeuristicText",
    "RequestCheck",
    "TextCounter",
    "TiktokenText",
    "TokenCounter",
    "TokenizerUnavailable",
    "anchored_errors",
    "error_summary",
    "exact_estimator",
    "heuristic_tokens",
    "load_encoding",
    "named_estimator",
    "percentile",
    "tiktoken_cache_dir",
]
