"""The content blocks an item holds: text, images, documents, reasoning, tool calls and results, summaries.

Each block is a frozen dataclass with its ``kind``; whatever a provider sends
that the model has no slot for rides along in ``extra`` (and a block of a kind
not modelled at all is :class:`Opaque`), so the adapters write the exact wire
message back. :mod:`contextfold.conversation` holds them in items, and is
where they are imported from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, Union

# The JSON aliases live here, below conversation (which re-exports them), so that the blocks' fields can use them.
JSONValue: TypeAlias = Union[None, bool, int, float, str, Sequence["JSONValue"], Mapping[str, "JSONValue"]]  # noqa: UP007
"""A value as JSON holds it, read-only: what a wire message, a recorded session or a provider's reply is made of.
The containers are the read-only protocols, so a ``dict[str, str]`` is one too; code reading a value narrows it
(``isinstance(value, Mapping)``) before it indexes it, and mypy checks that it did."""

JSONObject: TypeAlias = Mapping[str, JSONValue]
"""A JSON object, read-only (a wire message, a block's provider fields, a tool call's arguments)."""


def _empty() -> JSONObject:
    return {}


@dataclass(frozen=True, slots=True)
class Text:
    """Plain text."""

    kind: ClassVar[Literal["text"]] = "text"
    text: str
    """The text, as the model reads it."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for (``cache_control``, ...), kept for lossless round trips."""


@dataclass(frozen=True, slots=True)
class Image:
    """An image, by URL (``data:`` URLs included) or as base64 ``data``."""

    kind: ClassVar[Literal["image"]] = "image"
    url: str | None = None
    """Where the provider fetches it, or a ``data:`` URL."""
    data: str | None = None
    """The image itself, base64-encoded."""
    media_type: str | None = None
    """``image/png``, ``image/jpeg``, ... when known."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""


@dataclass(frozen=True, slots=True)
class Document:
    """A document (PDF, plain text, file reference)."""

    kind: ClassVar[Literal["document"]] = "document"
    source: Mapping[str, Any]
    """The provider's own description of the document (its bytes, URL or file id)."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""


@dataclass(frozen=True, slots=True)
class Thinking:
    """Model reasoning."""

    kind: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str
    """The reasoning text."""
    signature: str | None = None
    """Sent back verbatim where the provider gave one (it checks the reasoning was not altered)."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""


@dataclass(frozen=True, slots=True)
class RedactedThinking:
    """Encrypted reasoning the provider returned; opaque to us, sent back as is."""

    kind: ClassVar[Literal["redacted_thinking"]] = "redacted_thinking"
    data: str
    """The encrypted reasoning, exactly as received."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the assistant made."""

    kind: ClassVar[Literal["tool_call"]] = "tool_call"
    id: str
    """The call's id, which its :class:`ToolResult` answers."""
    name: str
    """The tool called."""
    arguments: JSONObject = field(default_factory=_empty)
    """The parsed JSON object of arguments."""
    raw_arguments: str | None = None
    """The exact string the provider sent when its format carries arguments as a string (OpenAI), kept so the
    request can be reproduced byte for byte; whoever changes ``arguments`` must set this to ``None``, or the
    stale string is what gets sent."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The answer to one :class:`ToolCall`."""

    kind: ClassVar[Literal["tool_result"]] = "tool_result"
    call_id: str
    """The id of the call answered."""
    content: str | tuple[Block, ...] = ""
    """A string, or a tuple of content blocks (text, image, document)."""
    is_error: bool | None = None
    """Whether the tool failed; ``None`` when the source did not say."""
    tool_name: str | None = None
    """The tool of the call that produced this result; the conversation fills it in, so stages can reason
    about a result (which file did this read?) without searching for its call."""
    arguments: JSONObject | None = None
    """The arguments of that call, filled in the same way."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""

    @property
    def text(self) -> str:
        """The textual part of the content."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(b.text for b in self.content if isinstance(b, Text))


@dataclass(frozen=True, slots=True)
class Summary:
    """A summary in place of a span of items: written by contextfold, or a provider's own compaction.

    It is sent to providers as :attr:`text`, except to the provider named by
    :attr:`native_provider`, which gets :attr:`native` back exactly as it
    returned it (Anthropic's ``compaction`` block, OpenAI's ``compaction``
    item): that provider reads its own summary, every other reader the text.
    """

    kind: ClassVar[Literal["summary"]] = "summary"
    text: str
    """The whole text sent, preamble included."""
    covers: int = 0
    """How many items it replaced."""
    preamble: int = 0
    """The first ``preamble`` characters of ``text`` introduce it to the model (the pipeline writes them);
    :attr:`body` is what the summarizer wrote."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""
    native: JSONObject | None = None
    """The provider's own compaction block or item this summary stands for, as returned (``None``: contextfold's)."""
    native_provider: str | None = None
    """The format :attr:`native` came from and goes back to (``"anthropic"``, ``"responses"``)."""

    def native_for(self, provider: str) -> JSONObject | None:
        """What to send ``provider`` in this summary's place: its own compaction, or ``None`` (send the text)."""
        return self.native if self.native is not None and self.native_provider == provider else None

    @property
    def body(self) -> str:
        """The summary without its preamble: what a later summary quotes as the earlier one."""
        return self.text[self.preamble :].lstrip()


@dataclass(frozen=True, slots=True)
class Opaque:
    """A block of a kind we do not model, carried through untouched."""

    kind: ClassVar[Literal["opaque"]] = "opaque"
    data: Mapping[str, Any]
    """The block exactly as received."""
    provider: str | None = None
    """The format it came from (``"anthropic"``, ``"openai"``, ``"responses"``)."""
    extra: JSONObject = field(default_factory=_empty)
    """The provider's fields the model has no slot for, kept for lossless round trips."""


Block = Text | Image | Document | Thinking | RedactedThinking | ToolCall | ToolResult | Summary | Opaque
BLOCK_TYPES: tuple[type, ...] = (
    Text,
    Image,
    Document,
    Thinking,
    RedactedThinking,
    ToolCall,
    ToolResult,
    Summary,
    Opaque,
)


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool definition: name, description and JSON-schema parameters."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] = field(default_factory=_empty)
    extra: JSONObject = field(default_factory=_empty)
