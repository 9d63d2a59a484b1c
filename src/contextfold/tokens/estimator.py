"""The block estimator: tokens of items, headers and whole requests through one text counter.

Text is counted by a :mod:`~contextfold.tokens.text` counter; what is not
text (images, documents, tool calls, the per-message framing) has its own
rule in :class:`BlockCosts`. Every item is measured once and the figure kept
in ``Item.readings``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..conversation import (
    Block,
    Conversation,
    Document,
    Header,
    Image,
    Item,
    Opaque,
    RedactedThinking,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
)
from ..errors import TokenizerUnavailable
from ..readings import Key
from .media import b64decode, image_size, pdf_pages
from .text import HeuristicText, RememberedText, TextCounter, TiktokenText

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class BlockCosts:
    """What the parts of a request that are not plain text cost, in tokens.

    The framing figures follow OpenAI's published accounting for chat messages
    (about 3-4 tokens per message); providers differ, and the anchored counter
    calibrates the difference away. The image rule is Anthropic's
    (``width * height / 750``, long edge scaled to 1,568 px, about 1,600
    tokens at most); PDF pages cost text plus a page image, measured at
    1,600-2,300 tokens on Claude.
    """

    message_tokens: int = 4
    tool_call_tokens: int = 8  # the call's id, type and framing around name and arguments
    tool_result_tokens: int = 4  # the call id the result answers
    tool_spec_tokens: int = 8
    image_pixels_per_token: int = 750
    image_max_edge_px: int = 1568
    image_max_tokens: int = 1600
    image_default_tokens: int = 1600  # dimensions unknown: assume a full-size image
    pdf_page_tokens: int = 2000
    pdf_bytes_per_page: int = 60_000  # page count unreadable (compressed object streams): guess from size
    document_default_tokens: int = 6000  # a document by URL or file id: size unknown, assume three pages
    redacted_thinking_chars_per_token: float = 4.0  # base64 of ciphertext: ~3 bytes per token of reasoning


NO_FRAMING = BlockCosts(message_tokens=0, tool_call_tokens=0, tool_result_tokens=0, tool_spec_tokens=0)
"""Costs with no per-message framing: for comparing raw text measures."""


_COUNT_KEYS: dict[str, Key[int]] = {}
"""One key per counter name: estimators that count alike (a background job's copy) share an item's count."""


class Estimator:
    """Tokens of items, headers and whole requests through one text counter.

    Each item is measured once: the figure is kept in ``item.readings`` under
    the key of :attr:`name` (estimators of one name share it), so re-counting a conversation after appending k items costs
    k measurements; and each distinct text is counted once
    (:class:`~.text.RememberedText`), so an item a stage rebuilds around
    strings already seen costs lookups.
    """

    def __init__(self, text: TextCounter | None = None, costs: BlockCosts = BlockCosts()) -> None:
        self.text = text if isinstance(text, RememberedText) else RememberedText(text or HeuristicText())
        self.costs = costs
        suffix = "" if costs == BlockCosts() else f"#{hashlib.sha1(repr(costs).encode()).hexdigest()[:8]}"
        self.name = f"tokens:{self.text.name}{suffix}"
        self.key = _COUNT_KEYS.setdefault(self.name, Key(self.name))
        self._header: tuple[Header, int] | None = None

    # -- whole requests
    def conversation(self, conversation: Conversation) -> int:
        """Header plus items, as one request would carry them."""
        return self.header(conversation.header) + self.items(conversation.items)

    def items(self, items: Sequence[Item]) -> int:
        return sum(self.item(item) for item in items)

    def header(self, header: Header) -> int:
        """System items, tool definitions and pinned items (remembered for the last header seen)."""
        remembered = self._header  # read once: a background summary counts on another thread
        if remembered is not None and (remembered[0] is header or remembered[0] == header):
            return remembered[1]
        tokens = self.items(header.system) + self.items(header.pinned) + self.tools(header.tools)
        self._header = (header, tokens)
        return tokens

    def tools(self, specs: Sequence[ToolSpec | Opaque]) -> int:
        """Tool definitions: name, description and JSON schema of each, with the spec framing."""
        return sum(self._tool_spec(spec) for spec in specs)

    def item(self, item: Item) -> int:
        tokens = item.readings.get(self.key)
        if tokens is None:
            tokens = item.readings.set(self.key, self._measure_item(item))
        return tokens

    # -- measuring (not memoized)
    def _measure_item(self, item: Item) -> int:
        return self.costs.message_tokens + sum(self.block(block) for block in item.blocks)

    def block(self, block: Block) -> int:
        costs = self.costs
        if isinstance(block, Summary):  # the preamble is the same in every summary, the body the summarizer measured
            return self.text(block.text[: block.preamble]) + self.text(block.text[block.preamble :])
        if isinstance(block, Text):
            return self.text(block.text)
        if isinstance(block, ToolCall):
            arguments = block.raw_arguments
            if arguments is None:
                arguments = json.dumps(block.arguments, ensure_ascii=False)
            return costs.tool_call_tokens + self.text(block.name) + self.text(arguments)
        if isinstance(block, ToolResult):
            if isinstance(block.content, str):
                return costs.tool_result_tokens + self.text(block.content)
            return costs.tool_result_tokens + sum(self.block(b) for b in block.content)
        if isinstance(block, Thinking):
            # Counted: newer models keep reasoning in context, and counting long is the safe side.
            return self.text(block.thinking)
        if isinstance(block, RedactedThinking):
            return round(len(block.data) / costs.redacted_thinking_chars_per_token)
        if isinstance(block, Image):
            return self._image(block)
        if isinstance(block, Document):
            return self._document(block.source)
        if isinstance(block, Opaque):
            return self.text(json.dumps(block.data, ensure_ascii=False, default=str))
        raise TypeError(f"not a block: {block!r}")

    def _tool_spec(self, spec: ToolSpec | Opaque) -> int:
        if isinstance(spec, Opaque):
            return self.costs.tool_spec_tokens + self.block(spec)
        schema = json.dumps(spec.parameters, ensure_ascii=False)
        return self.costs.tool_spec_tokens + self.text(spec.name) + self.text(spec.description or "") + self.text(schema)

    def _image(self, block: Image) -> int:
        costs = self.costs
        size = image_size(block)
        if size is None:
            return costs.image_default_tokens
        width, height = size
        scale = min(1.0, costs.image_max_edge_px / max(width, height, 1))
        pixels = (width * scale) * (height * scale)
        return min(costs.image_max_tokens, math.ceil(pixels / costs.image_pixels_per_token))

    def _document(self, source: Mapping[str, Any]) -> int:
        costs = self.costs
        kind = source.get("type")
        if kind == "text":
            return self.text(str(source.get("data", "")))
        if kind == "content":
            return sum(self._document_part(part) for part in source.get("content") or ())
        if kind == "base64":
            data = b64decode(str(source.get("data", "")))
            if "pdf" not in str(source.get("media_type", "pdf")):
                return self.text(data.decode("utf-8", "replace"))
            pages = pdf_pages(data) or max(1, round(len(data) / costs.pdf_bytes_per_page))
            return pages * costs.pdf_page_tokens
        return costs.document_default_tokens

    def _document_part(self, part: object) -> int:
        if isinstance(part, Mapping) and part.get("type") == "text":
            return self.text(str(part.get("text", "")))
        if isinstance(part, Mapping) and part.get("type") == "image":
            return self.costs.image_default_tokens
        return self.text(json.dumps(part, ensure_ascii=False, default=str))


TOKENIZER_CHOICES = ("auto", "estimate", "o200k", "cl100k")
"""What a command line may name as its token counter (``auto``: exact when the file is at hand offline)."""
_ENCODINGS = {"o200k": "o200k_base", "cl100k": "cl100k_base"}


def named_estimator(tokenizer: str) -> Estimator:
    """The estimator one of :data:`TOKENIZER_CHOICES` names.

    ``auto`` never touches the network: exact o200k counts when the file is
    on this machine (:func:`~.text.load_encoding` without download), else the
    estimate, with a logged warning saying how to get exact counts offline.
    """
    if tokenizer == "estimate":
        return Estimator()
    if tokenizer == "auto":
        try:
            return exact_estimator("o200k_base", download=False)
        except TokenizerUnavailable as error:
            log.warning("counting tokens with the block-aware estimate (a few %% off): %s", error)
            return Estimator()
    return exact_estimator(_ENCODINGS[tokenizer])


def exact_estimator(
    encoding: str = "o200k_base", tokenizers_dir: str | os.PathLike[str] | None = None, *, download: bool = True
) -> Estimator:
    """An :class:`Estimator` counting text exactly with tiktoken (raises :class:`TokenizerUnavailable`)."""
    return Estimator(TiktokenText(encoding, tokenizers_dir, download=download))
