"""OpenAI Chat Completions messages as recorded by agents (mini-swe-agent, tau-bench, SWE-agent).

These files hold the chat as sent to the model, plus agent-specific keys
that each importer reads itself. The chat message is read by the OpenAI Chat
adapter, the one reader of that format, so an imported message becomes
exactly the items the adapter makes of it (file parts, image detail, custom
tool calls, invalid arguments included); the importer names the keys that
are its recording's own, and those are left out of the message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..conversation import Block, Item, JSONObject
from ._common import ConversationBuilder, read_wire


def add_message(
    builder: ConversationBuilder,
    message: object,
    where: str,
    timestamp: float | None = None,
    meta: JSONObject | None = None,
    facts: JSONObject | None = None,
    own_keys: Sequence[str] = (),
) -> None:
    """Add one chat message; ``facts`` go with the result of a ``tool`` message, ``own_keys`` are not the chat's."""
    for item in read_message(builder, message, where, own_keys):
        builder.add_item(item, where, timestamp, meta, facts)


def read_message(builder: ConversationBuilder, message: object, where: str, own_keys: Sequence[str] = ()) -> list[Item]:
    """The items the OpenAI Chat adapter makes of one recorded message, without the recording's own keys."""
    if not isinstance(message, Mapping):
        raise builder.source.error(where, "a message must be an object")
    wire = {key: value for key, value in message.items() if key not in own_keys}
    return read_wire(builder, "openai", [wire], where)


def content_of(builder: ConversationBuilder, content: object, where: str) -> str | tuple[Block, ...]:
    """A recorded message's ``content`` where an importer takes it on its own (an observation, a thought): a string
    as it is (``None``: empty), a list of parts (text, images: what agents send Claude with cache marks, or a
    screenshot) as the OpenAI Chat adapter reads them, never dropped for not being a string."""
    if content is None or isinstance(content, str):
        return content or ""
    items = read_wire(builder, "openai", [{"role": "user", "content": content}], where)
    return tuple(block for item in items for block in item.blocks)
