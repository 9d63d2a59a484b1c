"""A request as the replay counts, searches and dumps it: OpenAI Chat Completions messages.

Every figure the replay reports is computed from this one rendering, so the
``--requests`` dump holds exactly what was counted, and a recount from the
dump alone (:mod:`.check`) arrives at the same numbers. Each item is rendered
by the adapter once, and what was rendered is read back by the adapter into
the neutral model (:func:`read_message`); that item is what is counted, with
the same :class:`~contextfold.tokens.Estimator` the facade uses, and
searched. The recount reads the dumped messages back the same way, so the
two share the rules and nothing else. Both the rendering and the count are
kept in ``Item.readings``, which keeps a replay at O(total items)
tokenization however many requests repeat an item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, replace
from functools import cached_property

from ..adapters.openai_chat import from_openai, to_openai, tools_to_openai
from ..conversation import Block, Conversation, Header, Item, JSONObject, JSONValue, Opaque, ToolResult, readable_text
from ..errors import InvalidMessage
from ..readings import Key
from ..tokens import Estimator



@dataclass(frozen=True, eq=False)
class Message:
    """One item as sent: the wire message, its JSON line fragment (for the dump), the message read back
    (what is counted) and its searchable text.

    Compared by identity (``eq=False``): the same item gives the same object.
    """

    data: dict[str, JSONValue]
    json: str
    item: Item
    text: str

    @cached_property
    def wire_text(self) -> str:
        """The message's text with tool-call arguments as sent (JSON), where recall looks for what was used."""
        return readable_text(self.item)


class _AnyCall(AbstractSet[str]):
    """Every call id: a message read on its own may answer a call made in an earlier message."""

    def __contains__(self, call_id: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def read_message(data: JSONObject) -> Item:
    """One Chat Completions message read back by the adapter into a neutral item, out of its request."""
    conversation = from_openai([data], known_call_ids=_AnyCall())
    return (*conversation.header.system, *conversation.items)[0]


def as_message(data: dict[str, JSONValue]) -> Message:
    """A wire message with its JSON, the item it reads back as, and its searchable text."""
    item = read_message(data)
    return Message(data, json.dumps(data, ensure_ascii=False), item, readable_text(item, decode_arguments=True))


_RENDERED: Key[Message | None] = Key("openai_message")


def render_item(item: Item) -> Message | None:
    """The item as one Chat Completions message, or ``None`` when nothing of it can be sent.

    An item the format cannot carry as is (an image inside a tool result, a
    block from another provider) is rendered in the nearest OpenAI shape (the
    image stays inside the tool message), so that it is still counted and
    dumped; only reasoning with no readable text is left out, with the
    adapter's :class:`~contextfold.adapters.LossyConversion` warning.
    """
    return item.readings.setdefault(_RENDERED, lambda: _render(item))


def _render(item: Item) -> Message | None:
    try:
        written = to_openai(Conversation((item,)))
    except InvalidMessage:
        written = to_openai(Conversation((_portable(item),)))
    return as_message(written[0]) if written else None


def recorded_messages(recording: Conversation) -> list[tuple[int | None, Message]]:
    """A recording read as a request would carry it: its system items first, then every item, each as the
    message it renders to, with the item's index (``None`` for a system item); an item with nothing to send
    is no message."""
    messages: list[tuple[int | None, Message]] = [
        (None, m) for m in map(render_item, recording.header.system) if m is not None
    ]
    messages += [(index, m) for index, m in ((i, render_item(item)) for i, item in enumerate(recording.items))
                 if m is not None]
    return messages


def render_request(request: Conversation, estimator: Estimator) -> tuple[list[Message], list[int]]:
    """The request's messages (the header's system items, its pinned items, the conversation) and the tokens of each.

    Items with nothing to send are left out; an item that cannot be rendered
    raises the adapter's error, naming the item's index in the conversation
    (``None`` and a ``header.`` field for header items).
    """
    header = request.header
    numbered = [
        *((None, f"header.system[{k}].", item) for k, item in enumerate(header.system)),
        *((None, f"header.pinned[{k}].", item) for k, item in enumerate(header.pinned)),
        *((index, "", item) for index, item in enumerate(request.items)),
    ]
    messages: list[Message] = []
    tokens: list[int] = []
    for index, prefix, item in numbered:
        try:
            rendered = render_item(item)
        except InvalidMessage as error:
            raise type(error)(index, prefix + error.field, f"item {item.id!r}: {error.reason}") from error
        if rendered is not None:
            messages.append(rendered)
            tokens.append(estimator.item(rendered.item))
    return messages, tokens


def summary_positions(request: Conversation, messages: Sequence[Message]) -> list[int]:
    """Where in ``messages`` (``request`` rendered) the summaries are: the items holding a summary block."""
    summaries = {id(render_item(item)) for item in (*request.header.pinned, *request.items) if item.kind == "summary"}
    return [number for number, message in enumerate(messages) if id(message) in summaries]


def item_tokens(item: Item, estimator: Estimator) -> int:
    """Tokens of the item as sent (0 when nothing of it is)."""
    rendered = render_item(item)
    return 0 if rendered is None else estimator.item(rendered.item)


def message_tokens(data: JSONObject, estimator: Estimator) -> int:
    """Tokens of one Chat Completions message, read back into the model and counted like any item."""
    return estimator.item(read_message(data))


def render_tools(header: Header) -> list[dict[str, JSONValue]]:
    """The header's tool definitions in Chat Completions form; another provider's own tools are kept as they are."""
    try:
        return tools_to_openai(Conversation((), header))
    except InvalidMessage:
        tools = tuple(replace(spec, provider="openai") if isinstance(spec, Opaque) else spec for spec in header.tools)
        return tools_to_openai(Conversation((), replace(header, tools=tools)))


def tools_tokens(tools: Sequence[JSONObject], estimator: Estimator) -> int:
    """Tokens of tool definitions in Chat Completions form, read back by the adapter."""
    return estimator.tools(from_openai([], tools=tools).header.tools)


# --------------------------------------------------------------------------- the nearest OpenAI shape


def _portable(item: Item) -> Item:
    """The item as if read from OpenAI, without other formats' fields.

    The adapter writes an item of its own format as faithfully as it can
    (images inside a tool message, say), which is what counting needs; the
    original ``meta`` and block ``extra`` belong to another format and are
    left behind.
    """
    return Item(item.role, tuple(map(_portable_block, item.blocks)), id=item.id, meta={"origin": "openai"})


def _portable_block(block: Block) -> Block:
    if isinstance(block, ToolResult) and not isinstance(block.content, str):
        return replace(block, content=tuple(map(_portable_block, block.content)), extra={})
    if isinstance(block, Opaque):
        return replace(block, provider="openai", extra={})
    return replace(block, extra={})
