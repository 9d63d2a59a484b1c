"""Summarizers: turning a span of conversation into one text (see :mod:`.base` for the contract).

:class:`ExtractiveSummarizer` is the default: offline, deterministic, structured.
:class:`ModelSummarizer` has a provider's model write the summary
(``ModelSummarizer(provider="anthropic")``; its SDK is imported only when one is
constructed), falling back to the extractive one when the model fails (:mod:`.llm`).
"""

from .base import Summarizer, SummaryRequest, SummaryResult, summary_preamble
from .extractive import SECTION_TITLES, ExtractiveSummarizer
from .llm import LLMSummarizer, ModelSummarizer

__all__ = [
    "SECTION_TITLES",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "ModelSummarizer",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "summary_preamble",
]
