"""Summarizers: turning a span of conversation into one text (see :mod:`.base` for the contract).

:class:`ExtractiveSummarizer` is the default: offline, deterministic, structured.
:class:`AnthropicSummarizer` and :class:`OpenAISummarizer` have a model write
the summary (the SDKs are imported only when one is constructed), falling
back to the extractive one when the model fails (:mod:`.llm`).
"""

from .base import Summarizer, SummaryRequest, SummaryResult, summary_preamble
from .extractive import SECTION_TITLES, ExtractiveSummarizer
from .llm import AnthropicSummarizer, LLMSummarizer, OpenAISummarizer

__all__ = [
    "SECTION_TITLES",
    "AnthropicSummarizer",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "OpenAISummarizer",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "summary_preamble",
]
