"""The adapter conformance suite: what every provider's wire format must do, as tests a new provider inherits.

A provider passes when its adapter writes what it reads back (the same wire
body, the same texts, roles and call ids), renders a request incrementally
exactly as it writes it whole, reads its own reply's text and the usage that
anchors the token count (:meth:`~.base.Adapter.read_usage`), refuses bad
input with a typed error, and holds its SDK half (:attr:`~.base.Adapter.client`)
or, wire-only, none. Run it from pytest by subclassing
:class:`AdapterConformance` in a ``Test``-named class::

    class TestMyFormat(AdapterConformance):
        adapter = MyFormat()
        reply = {"text": "done", "usage": {"prompt": 40, "output": 2}}  # one reply as the provider sends it
        reply_text, reply_prompt_tokens = "done", 40

The suite holds plain ``assert`` statements and imports nothing outside
contextfold, so it runs under any test runner that collects such classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ..conversation import Conversation, Header, Item, JSONObject, Text, ToolCall, ToolSpec, assistant, tool, user
from ..errors import InvalidContent, InvalidConversation, WireOnlyProvider
from .base import Adapter, ProviderClient


def sample_conversations() -> list[Conversation]:
    """The conversations every format must carry: plain turns, and a system prompt, a tool and one call answered."""
    header = Header(system=(Item("system", (Text("You are terse."),)),),
                    tools=(ToolSpec("read_file", "Read a file.", {"type": "object",
                                                                 "properties": {"path": {"type": "string"}}}),))
    return [
        Conversation([user("hello"), assistant("hi, how can I help?"), user("list the files")]),
        Conversation([user("show me a.txt"),
                      assistant("reading it", [ToolCall("call_1", "read_file", {"path": "a.txt"})]),
                      tool("call_1", "the file's text"), assistant("a.txt says: the file's text")], header),
    ]


def shape(conversation: Conversation) -> list[tuple[str, str, tuple[str, ...]]]:
    """What a round trip must keep of each item: its role, its text and the ids of the calls it makes or answers."""
    def ids(item: Item) -> tuple[str, ...]:
        result = item.tool_result
        return (result.call_id,) if result is not None else tuple(call.id for call in item.tool_calls)
    return [(item.role, item.text, ids(item)) for item in conversation.items]


def tool_names(conversation: Conversation) -> list[str]:
    return [spec.name for spec in conversation.header.tools if isinstance(spec, ToolSpec)]


class AdapterConformance:
    """The conformance tests; a subclass names its :attr:`adapter` and one :attr:`reply` of the provider's.

    Override :meth:`read_body` when the format keeps its system prompt in a field other than ``system``.
    """

    adapter: ClassVar[Adapter]
    reply: ClassVar[JSONObject]
    """One reply exactly as the provider sends it (its dict), holding text and usage."""
    reply_text: ClassVar[str]
    """The text that reply holds."""
    reply_prompt_tokens: ClassVar[int]
    """The whole prompt that reply reports (cached parts included): the figure the token count anchors on."""

    def read_body(self, body: Mapping[str, Any]) -> Conversation:
        """A request body this adapter wrote, read back."""
        return self.adapter.read(body[self.adapter.messages_key], system=body.get("system") or None,
                                 tools=body.get("tools") or None)

    def test_what_it_writes_it_reads_back_unchanged(self) -> None:
        for conversation in sample_conversations():
            body = self.adapter.write(conversation)
            again = self.read_body(body)
            assert shape(again) == shape(conversation), f"{self.adapter.name}: items changed by a round trip"
            assert again.header.system_text == conversation.header.system_text, "the system prompt changed"
            assert tool_names(again) == tool_names(conversation), "the tools changed"
            assert self.adapter.write(again) == body, f"{self.adapter.name}: the body changed by a round trip"

    def test_a_request_rendered_in_parts_is_the_request_written_whole(self) -> None:
        key = self.adapter.messages_key
        for conversation in sample_conversations():
            header = self.adapter.write_header(conversation.header)
            parts = self.adapter.request(header, self.adapter.write_items(conversation.items))
            assert parts[key] == self.adapter.write(conversation)[key], f"{self.adapter.name}: {key} differ"

    def test_its_reply_is_read_with_the_usage_that_anchors_the_count(self) -> None:
        reply = self.adapter.read_response(self.reply)
        assert reply.text == self.reply_text
        assert reply.usage is not None, f"{self.adapter.name}: the reply's usage was not read"
        assert reply.usage.prompt_tokens == self.reply_prompt_tokens, "read_usage must give the whole prompt"
        assert self.adapter.reported_usage(self.reply) == reply.usage

    def test_bad_input_is_a_typed_error(self) -> None:
        for messages in ([42], [{"role": ["not a role"]}], "not a list"):
            try:
                self.adapter.read(messages)  # type: ignore[arg-type]
            except InvalidConversation:
                continue
            raise AssertionError(f"{self.adapter.name}: read({messages!r}) raised no InvalidConversation")
        for bad in ("not a reply", [1, 2]):
            try:
                self.adapter.read_response(bad)
            except InvalidContent:
                continue
            raise AssertionError(f"{self.adapter.name}: read_response({bad!r}) raised no InvalidContent")

    def test_its_client_is_its_own_sdk_half_or_none(self) -> None:
        """A format with an SDK holds a :class:`~.base.ProviderClient` for itself, its SDK and models named; a
        wire-only one holds none, and asking for one is :class:`WireOnlyProvider` naming it and what asked."""
        client = self.adapter.client
        if client is None:
            try:
                self.adapter.require_client("a conformance check")
            except WireOnlyProvider as refused:
                assert refused.provider == self.adapter.name and self.adapter.name in str(refused)
                assert "a conformance check" in str(refused)
                return
            raise AssertionError(f"{self.adapter.name}: a wire-only adapter gave a client")
        assert isinstance(client, ProviderClient), f"{self.adapter.name}: its client is no ProviderClient"
        assert client.adapter is self.adapter, f"{self.adapter.name}: its client reads replies with another adapter"
        assert self.adapter.require_client("a conformance check") is client
        assert client.sdk.package and client.sdk.key_variables, f"{self.adapter.name}: its client names no SDK"
        assert client.default_model and client.summary_model, f"{self.adapter.name}: its client names no models"
