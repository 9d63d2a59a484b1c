"""Summarizers: turning a span of conversation into one text (see :mod:`.base` for the contract).

:class:`ExtractiveSummarizer` is the default: offline, deterministic, structured.
"""

from .base import Summarizer, SummaryRequest, SummaryResult, summary_preamble
from .extractive import SECTION_TITLES, ExtractiveSummarizer

__all__ = [
    "SECTION_TITLES",
    "ExtractiveSummarizer",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "summary_preamble",
]
