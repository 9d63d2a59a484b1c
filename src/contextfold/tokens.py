"""Token accounting: estimating, exact counting, and anchoring on what the provider reported.

Three layers, each usable alone:

* a *text counter* turns a string into tokens: :class:`HeuristicText` (no
  dependencies, tuned against o200k) or :class:`TiktokenText` (exact for
  OpenAI's ``o200k_base`` / ``cl100k_base``, loadable offline);
* an :class:`Estimator` applies one text counter to a whole item or header,
  with rules for what is not text (images, documents, tool calls, the
  per-message framing) and memoizes every item in ``Item.memo``;
* a :class:`TokenCounter` anchors on real figures: after each response,
  :meth:`TokenCounter.record_usage` takes the provider's prompt size, and the
  next count is that figure plus a calibrated estimate of what was added since.
  No provider's tokenizer for Claude, DeepSeek or Gemini is public, so anchoring
  is what makes the count right to a few percent for every model.

All counts are in tokens of the model that will read the request, except
where a docstring says the unit is o200k tokens.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
import os
import re
import shutil
import struct
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from .conversation import (
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
from .errors import ContextfoldError, TokenizerUnavailable
from .usage import Usage

# --------------------------------------------------------------------------- text counters


class TextCounter(Protocol):
    """Anything that turns text into a token count; ``name`` keys the per-item memo."""

    name: str

    def __call__(self, text: str) -> int: ...


# BPE tokenizers first split text into pieces (words with their leading space,
# digit groups, punctuation runs, whitespace runs) and then merge bytes inside
# each piece. The heuristic mirrors that split with one regular expression and
# charges each kind of piece what it costs on average. That is the "characters
# per token per content type" idea done at the piece level: prose is mostly
# short words (about 1 token each, ~4.4 chars/token), code and JSON add
# punctuation runs and indentation (~2.8-4.3 chars/token), CJK and base64 are
# charged per character.
_PIECES = re.compile(
    r"""
     (?P<cjk>[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff01-\uff60]+)
    |(?P<b64>(?=[A-Za-z0-9+/=]*\d)(?=[A-Za-z0-9+/=]*[A-Z])(?=[A-Za-z0-9+/=]*[a-z])[A-Za-z0-9+/=]{33,})
    |(?P<word>[A-Z]*[a-z]+|[A-Z]+)
    |(?P<uword>[^\W\d_]+)
    |(?P<num>\d+)
    |(?P<nl>\s*\n\s*)
    |(?P<sp>[ \t]{2,})
    |(?P<punct>[^\w\s]+|_+)
    """,
    re.VERBOSE,
)

# Costs in o200k tokens, fitted once offline (non-negative least squares,
# weighted for relative error) against tiktoken o200k_base on 4,351 chunks of
# up to 4,000 characters: mini-swe-agent and live-swe-agent messages, tool
# outputs and tool-call arguments, tau-bench JSON tool results, Python stdlib
# source, Russian prose (aider history, vim tutor), Chinese/Japanese/Korean
# prose (vim tutors) and random base64. Per-chunk median error 3-5 % on
# prose, code and JSON, 8 % on CJK and Cyrillic, under 1 % on base64
# (characters/4 is 11-63 % off on the same chunks).
_CJK_TOKENS_PER_CHAR = 0.819  # ~1.2 chars/token in o200k (Claude's tokenizer is nearer 1:1; calibration absorbs it)
_BASE64_TOKENS_PER_CHAR = 0.678  # ~1.5 chars/token: random data barely merges
_WORD_TOKENS = 0.959  # a Latin word of up to _SHORT_WORD_CHARS letters is about one token...
_LONG_WORD_TOKENS_PER_EXTRA_CHAR = 0.289  # ...and a longer one costs ~3.5 more chars/token beyond that
_SHORT_WORD_CHARS = 8
_OTHER_LETTER_TOKENS_PER_CHAR = 0.308  # Cyrillic, Greek, accented runs: ~3.2 chars/token
_DIGIT_GROUP_TOKENS = 1.764  # per group of up to 3 digits (o200k never merges more)
_NEWLINE_RUN_TOKENS = 1.006
_SPACE_RUN_TOKENS = 0.973  # indentation: a run of spaces is about one token
_PUNCT_RUN_TOKENS = 0.756
_PUNCT_TOKENS_PER_EXTRA_CHAR = 0.103


def heuristic_tokens(text: str) -> int:
    """Estimated o200k tokens of ``text``, without any tokenizer (about 8 MB/s)."""
    total = 0.0
    for match in _PIECES.finditer(text):
        kind = match.lastgroup
        size = match.end() - match.start()
        if kind == "word":
            total += _WORD_TOKENS + _LONG_WORD_TOKENS_PER_EXTRA_CHAR * max(0, size - _SHORT_WORD_CHARS)
        elif kind == "sp":
            total += _SPACE_RUN_TOKENS
        elif kind == "punct":
            total += _PUNCT_RUN_TOKENS + _PUNCT_TOKENS_PER_EXTRA_CHAR * (size - 1)
        elif kind == "nl":
            total += _NEWLINE_RUN_TOKENS
        elif kind == "num":
            total += _DIGIT_GROUP_TOKENS * ((size + 2) // 3)
        elif kind == "uword":
            total += _OTHER_LETTER_TOKENS_PER_CHAR * size
        elif kind == "cjk":
            total += _CJK_TOKENS_PER_CHAR * size
        else:  # b64
            total += _BASE64_TOKENS_PER_CHAR * size
    return round(total)


class HeuristicText:
    """The dependency-free text counter (:func:`heuristic_tokens`)."""

    name = "heuristic"

    def __call__(self, text: str) -> int:
        return heuristic_tokens(text)


class CharRatioText:
    """``len(text) / chars_per_token``: the crude rule, kept as a baseline to compare against."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token
        self.name = f"chars/{chars_per_token:g}"

    def __call__(self, text: str) -> int:
        return round(len(text) / self.chars_per_token)


# tiktoken downloads its BPE files from these URLs and caches them under the
# sha1 of the URL; the sha256 values are the ones tiktoken itself checks.
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
TOKENIZERS_DIR_ENV = "CONTEXTFOLD_TOKENIZERS_DIR"
"""Environment variable naming a folder holding ``o200k_base.tiktoken`` / ``cl100k_base.tiktoken``."""

_load_lock = threading.Lock()
_encodings: dict[tuple[str, str | None], Any] = {}


def tiktoken_cache_dir(tokenizers_dir: str | os.PathLike[str]) -> Path:
    """A fresh directory usable as ``TIKTOKEN_CACHE_DIR`` for the files in ``tokenizers_dir``.

    tiktoken looks for ``<cache>/<sha1 of the download URL>``; this links each
    ``<name>.tiktoken`` found in ``tokenizers_dir`` under that name, so tiktoken
    loads it with no network.
    """
    source = Path(tokenizers_dir)
    cache = Path(tempfile.mkdtemp(prefix="contextfold-tiktoken-"))
    for name in _ENCODING_SHA256:
        path = source / f"{name}.tiktoken"
        if path.exists():
            key = hashlib.sha1(_ENCODING_URL.format(name=name).encode()).hexdigest()
            (cache / key).symlink_to(path.resolve())
    return cache


def load_encoding(name: str = "o200k_base", tokenizers_dir: str | os.PathLike[str] | None = None) -> Any:
    """The tiktoken ``Encoding`` called ``name``, loaded once per process.

    With ``tokenizers_dir`` (or ``$CONTEXTFOLD_TOKENIZERS_DIR``) the BPE file is
    read from there; otherwise tiktoken's own cache or download is used.
    Raises :class:`TokenizerUnavailable` when tiktoken is not installed or the
    file cannot be had.
    """
    folder = tokenizers_dir if tokenizers_dir is not None else os.environ.get(TOKENIZERS_DIR_ENV)
    key = (name, str(folder) if folder is not None else None)
    with _load_lock:
        if key not in _encodings:
            _encodings[key] = _load_encoding_unlocked(name, folder)
        return _encodings[key]


def _load_encoding_unlocked(name: str, folder: str | os.PathLike[str] | None) -> Any:
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(
            f"exact counting with {name!r} needs tiktoken: pip install 'contextfold[tiktoken]'"
        ) from exc
    if folder is not None and not (Path(folder) / f"{name}.tiktoken").exists():
        raise TokenizerUnavailable(f"no {name}.tiktoken in {folder}")
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    cache = tiktoken_cache_dir(folder) if folder is not None else None
    try:
        if cache is not None:
            # tiktoken reads the variable (and the file) at load time only; both go right after.
            os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        return tiktoken.get_encoding(name)
    except Exception as exc:  # network errors, hash mismatch, unknown name: all mean "not here"
        where = f"from {folder}" if folder is not None else f"(set {TOKENIZERS_DIR_ENV} to a folder with {name}.tiktoken)"
        raise TokenizerUnavailable(f"could not load tiktoken encoding {name!r} {where}: {exc}") from exc
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
            if saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved


class TiktokenText:
    """Exact token counts with a tiktoken encoding (``o200k_base``: GPT-4o and later; ``cl100k_base``: GPT-4)."""

    def __init__(self, encoding: str = "o200k_base", tokenizers_dir: str | os.PathLike[str] | None = None) -> None:
        self._encoding = load_encoding(encoding, tokenizers_dir)
        self.name = f"tiktoken:{encoding}"

    def __call__(self, text: str) -> int:
        # Special-token text ("<|endoftext|>") in tool output is ordinary text to us.
        return len(self._encoding.encode(text, disallowed_special=()))


# --------------------------------------------------------------------------- blocks and items


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


class Estimator:
    """Tokens of items, headers and whole requests through one text counter.

    Each item is measured once: the figure is kept in ``item.memo`` under
    :attr:`name`, so re-counting a conversation after appending k items costs
    k measurements.
    """

    def __init__(self, text: TextCounter | None = None, costs: BlockCosts = BlockCosts()) -> None:
        self.text = text or HeuristicText()
        self.costs = costs
        suffix = "" if costs == BlockCosts() else f"#{hashlib.sha1(repr(costs).encode()).hexdigest()[:8]}"
        self.name = f"tokens:{self.text.name}{suffix}"
        self._header: tuple[Header, int] | None = None

    # -- whole requests
    def conversation(self, conversation: Conversation) -> int:
        """Header plus items, as one request would carry them."""
        return self.header(conversation.header) + self.items(conversation.items)

    def items(self, items: Sequence[Item]) -> int:
        return sum(self.item(item) for item in items)

    def header(self, header: Header) -> int:
        """System items, tool definitions and pinned items (remembered for the last header seen)."""
        if self._header is not None and (self._header[0] is header or self._header[0] == header):
            return self._header[1]
        tokens = self.items(header.system) + self.items(header.pinned)
        tokens += sum(self._tool_spec(spec) for spec in header.tools)
        self._header = (header, tokens)
        return tokens

    def item(self, item: Item) -> int:
        tokens = item.memo.get(self.name)
        if tokens is None:
            tokens = item.memo[self.name] = self._measure_item(item)
        return tokens

    # -- measuring (not memoized)
    def _measure_item(self, item: Item) -> int:
        return self.costs.message_tokens + sum(self.block(block) for block in item.blocks)

    def block(self, block: Block) -> int:
        costs = self.costs
        if isinstance(block, (Text, Summary)):
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
        size = _declared_size(block.extra) or _image_size(_image_bytes(block))
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
            data = _b64decode(str(source.get("data", "")))
            if "pdf" not in str(source.get("media_type", "pdf")):
                return self.text(data.decode("utf-8", "replace"))
            pages = len(_PDF_PAGE.findall(data)) or max(1, round(len(data) / costs.pdf_bytes_per_page))
            return pages * costs.pdf_page_tokens
        return costs.document_default_tokens

    def _document_part(self, part: Any) -> int:
        if isinstance(part, Mapping) and part.get("type") == "text":
            return self.text(str(part.get("text", "")))
        if isinstance(part, Mapping) and part.get("type") == "image":
            return self.costs.image_default_tokens
        return self.text(json.dumps(part, ensure_ascii=False, default=str))


_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")
_DATA_URL = re.compile(r"^data:[^;,]*;base64,", re.IGNORECASE)
_IMAGE_HEADER_B64_CHARS = 87_384  # 64 KiB of image: enough to reach a JPEG's frame header past EXIF


def _b64decode(data: str) -> bytes:
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4))
    except (binascii.Error, ValueError):
        return b""


def _declared_size(extra: Mapping[str, Any]) -> tuple[int, int] | None:
    width, height = extra.get("width"), extra.get("height")
    if isinstance(width, int) and isinstance(height, int) and width > 0 and height > 0:
        return width, height
    return None


def _image_bytes(block: Image) -> bytes:
    data = block.data
    if data is None and block.url and _DATA_URL.match(block.url):
        data = _DATA_URL.sub("", block.url, count=1)
    if not data:
        return b""
    head = data[:_IMAGE_HEADER_B64_CHARS]
    return _b64decode(head[: len(head) - len(head) % 4])


def _image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height in pixels from a PNG, GIF, WebP or JPEG header; ``None`` if unreadable."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            return 1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little")
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
    if data[:2] == b"\xff\xd8":
        return _jpeg_size(data)
    return None


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    position = 2
    while position + 9 < len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        length = int.from_bytes(data[position + 2 : position + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):  # start of frame
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return width, height
        position += 2 + length
    return None


def exact_estimator(encoding: str = "o200k_base", tokenizers_dir: str | os.PathLike[str] | None = None) -> Estimator:
    """An :class:`Estimator` counting text exactly with tiktoken (raises :class:`TokenizerUnavailable`)."""
    return Estimator(TiktokenText(encoding, tokenizers_dir))


# --------------------------------------------------------------------------- anchoring


@dataclass(frozen=True)
class _Anchor:
    """The last request the provider reported on: what it held and what it cost."""

    header: Header
    items: tuple[Item, ...]
    reported: int  # the provider's prompt tokens
    estimated: int  # the estimator's tokens for the same request


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
        (``prompt_tokens`` 0: the provider sent none) leaves the anchor as it was.
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
        self._anchor = _Anchor(header, items, usage.prompt_tokens, estimated)

    def _observe(self, real_growth: int, estimated_growth: int) -> None:
        if estimated_growth <= 0:
            return
        ratio = self.ratio
        observed = min(max(real_growth / estimated_growth, ratio / self.max_step), ratio * self.max_step)
        self._real_growth = self.decay * self._real_growth + observed * estimated_growth
        self._estimated_growth = self.decay * self._estimated_growth + estimated_growth


# --------------------------------------------------------------------------- checking against recordings


class RequestCheck(NamedTuple):
    """One replayed request: ``step`` is the index of the assistant item that answered it."""

    step: int
    estimate: int
    reported: int

    @property
    def error(self) -> float:
        """Signed relative error of the estimate (0.02 = 2 % over)."""
        return (self.estimate - self.reported) / self.reported


def anchored_errors(
    conversation: Conversation, counter_factory: Callable[[], TokenCounter] = TokenCounter
) -> list[RequestCheck]:
    """Replay a recorded conversation request by request against its reported usage.

    Every assistant item carrying ``meta["usage"]`` answered a request made of
    the header and all items before it. That request is counted anchored on the
    previous reported usage, then its own usage is recorded. The first request
    has nothing to anchor on and is not checked.
    """
    counter = counter_factory()
    checks: list[RequestCheck] = []
    for index, item in enumerate(conversation.items):
        usage = item.meta.get("usage") if item.role == "assistant" else None
        if not usage:
            continue
        reported = Usage.from_dict(usage)
        if reported.prompt_tokens <= 0:
            continue
        request = conversation.with_items(conversation.items[:index])
        estimate = counter.count(request)
        if counter.anchored:
            checks.append(RequestCheck(index, estimate, reported.prompt_tokens))
        counter.record_usage(reported, request)
    return checks


def error_summary(checks: Sequence[RequestCheck]) -> dict[str, float | int | None]:
    """``requests``, ``median_abs_error`` and ``p95_abs_error`` (fractions; ``None`` when empty)."""
    errors = sorted(abs(check.error) for check in checks)
    return {
        "requests": len(errors),
        "median_abs_error": percentile(errors, 0.5),
        "p95_abs_error": percentile(errors, 0.95),
    }


def percentile(sorted_values: Sequence[float], fraction: float) -> float | None:
    """Linear-interpolated percentile of already sorted values (``fraction`` in 0..1)."""
    if not sorted_values:
        return None
    position = fraction * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)
