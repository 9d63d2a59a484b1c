"""What every provider adapter offers: the one interface the rest of contextfold talks to a wire format through.

An :class:`Adapter` is everything contextfold knows about one provider.
Its wire shapes in both directions: request messages and tool definitions
(:meth:`~Adapter.read`, :meth:`~Adapter.write`), the pieces an incremental
renderer assembles a request from (:meth:`~Adapter.write_header`,
:meth:`~Adapter.write_items`, :meth:`~Adapter.request`), prompt-cache marks,
model replies (:meth:`~Adapter.read_response`), usage (:meth:`~Adapter.read_usage`,
the anchor of the token count) and stop reasons, and whether an error says the
prompt was too long (:meth:`~Adapter.prompt_too_long`, the one overflow
detector). That wire part is all a format must define: five methods
(``_read``, ``write``, ``write_header``, ``_answer``, ``_stop``) and
``read_usage``.

Optionally its SDK half, a :class:`ProviderClient` (:attr:`~Adapter.client`): the SDK, client objects, its
error classes and what an error means, its default models, how a request is sent (which a summary request uses
too) and the provider's own compaction. A format with none is *wire-only* (``client`` is ``None``): asked for
one (:meth:`~Adapter.require_client`), it raises :class:`~contextfold.errors.WireOnlyProvider` naming itself
and what needed it.

Callers pick an adapter by name with :func:`contextfold.adapters.adapter_for`
and never look inside the dicts it returns.
"""

from __future__ import annotations

import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..conversation import Conversation, Header, Item, JSONObject, JSONValue, Text
from ..errors import ContextfoldError, InvalidContent, WireOnlyProvider
from ..sdk import SDK, SDK_DEFAULTS, ClientOptions
from ..usage import EVERY_TOKEN, CacheRule, Usage
from .calls import CallError
from .overflow import PromptTooLong, prompt_too_long
from .reminders import reminder_item
from .usage import openai_usage


@dataclass(frozen=True)
class WireHeader:
    """A header rendered once and reused for every request while it does not change.

    ``fields`` are the request fields besides the message list (``system``,
    ``tools``); ``lead`` the messages sent before the conversation (OpenAI's
    system messages, pinned items; Anthropic's :meth:`Adapter.request` puts
    pinned items after a compaction block instead); ``marked`` whether the
    caller placed prompt-cache marks of its own in it; ``static_blocks`` how many of the
    first blocks of the ``system`` field are the static part of a split system
    prompt (:attr:`~contextfold.conversation.Header.static_system`), for
    formats that mark it.
    """

    fields: Mapping[str, Any]
    lead: Sequence[Mapping[str, Any]]
    marked: bool = False
    static_blocks: int = 0


def present_fields(**fields: JSONValue) -> dict[str, JSONValue]:
    """The request fields that have a value: providers reject ``"tools": []`` and some a ``null`` system."""
    return {name: value for name, value in fields.items() if value}


@dataclass(frozen=True)
class CacheMiss:
    """A prompt-cache miss the provider diagnosed against an earlier request: why, and the tokens it cost.

    ``reason`` is the provider's word (``messages_changed``, ``input_changed``,
    ``tools_changed``...); ``missed_tokens`` is ``None`` when the provider
    could not diagnose (the earlier request unknown to it, or unavailable).
    """

    reason: str
    missed_tokens: int | None


@dataclass(frozen=True)
class Reply:
    """A model's answer read off the wire: its items, the usage reported, and whether it ended normally.

    ``stop`` is why the model stopped, in the provider's word; ``incomplete``
    says why the answer is not whole (cut at the reply limit, refused,
    filtered) in words, ``None`` when the model finished on its own.
    ``response_id`` is the provider's id of the reply (a later request names
    it to ask for cache diagnostics); ``cache_miss`` what those diagnostics
    said, when the request asked and the provider reported a miss.
    """

    conversation: Conversation
    usage: Usage | None = None
    stop: str | None = None
    incomplete: str | None = None
    response_id: str | None = None
    cache_miss: CacheMiss | None = None

    @property
    def text(self) -> str:
        """The answer's text blocks, joined as the model wrote them."""
        return "".join(b.text for item in self.conversation for b in item.blocks if isinstance(b, Text))


class Adapter(ABC):
    """One provider's wire format. Stateless: one instance per provider, shared."""

    name: str
    """The provider name callers choose it by (``"anthropic"``, ``"openai"``, ``"responses"``)."""
    title: str
    """The API's name, for messages (``"Anthropic Messages"``)."""
    messages_key: str
    """The request field holding the message list (``"messages"``, ``"input"``, ``"contents"``)."""
    usage_field: str
    """The reply field holding the usage the provider reported (``"usage"``, ``"usage_metadata"``)."""
    system_messages: bool = True
    """Whether a system message may stand among the messages, after the conversation started (Anthropic's
    ``role: "system"`` messages, OpenAI's system and developer messages; Gemini has none)."""
    cache_rule: CacheRule = EVERY_TOKEN
    """How the provider's prompt cache serves a common prefix, for pricing (Anthropic's 1,024-token minimum is
    left out: a breakpoint past it is the common case)."""

    # ------------------------------------------------------------------ requests
    def read(
        self,
        messages: Sequence[JSONObject],
        *,
        system: object = None,
        tools: Sequence[JSONObject] | None = None,
        known_call_ids: Iterable[str] = (),
    ) -> Conversation:
        """A request's messages (and ``system``/``tools``) as a conversation; errors name index and field.

        ``known_call_ids`` names calls made in messages read before these
        (tool results may answer them).
        """
        return self._read(messages, system, tools, known_call_ids)

    @abstractmethod
    def _read(self, messages: object, system: object, tools: object, known_call_ids: Iterable[str]) -> Conversation: ...

    @abstractmethod
    def write(self, conversation: Conversation) -> dict[str, Any]:
        """The request body for ``conversation``: its messages, tools and (Anthropic) system prompt."""

    @abstractmethod
    def write_header(self, header: Header) -> WireHeader:
        """The parts of a request that come from the header."""

    def write_items(self, items: Sequence[Item]) -> list[dict[str, Any]]:
        """The wire messages of ``items`` alone (no header)."""
        return list(self.write(Conversation(items))[self.messages_key])

    def request(
        self, header: WireHeader, messages: Sequence[JSONObject], cache_at: Sequence[int] = ()
    ) -> dict[str, JSONValue]:
        """A request body from a rendered header and the conversation's messages.

        ``cache_at`` asks for prompt-cache breakpoints after these messages
        (indexes into ``messages``, most wanted first: a format with a limit
        keeps the first ones), and on the header; formats whose cache needs no
        marks ignore it.
        """
        return {self.messages_key: [*header.lead, *messages], **header.fields}

    def cache_marked(self, item: Item) -> bool:
        """Whether the caller put a prompt-cache mark of this format in ``item`` (none by default)."""
        return False

    def with_reminders(self, request: Mapping[str, Any], reminders: Sequence[str]) -> dict[str, JSONValue]:
        """``request`` with ``reminders`` (checked, :mod:`.reminders`) after its last message, for this request only.

        By default they are one user message of their own at the end, so every
        message before it, which the provider's cache keys on, is unchanged.
        """
        if not reminders:
            return dict(request)
        added = self.write_items([reminder_item(reminders)])
        return {**request, self.messages_key: [*request[self.messages_key], *added]}

    def for_summary(self, request: JSONObject, cache_key: str | None = None) -> dict[str, JSONValue]:
        """``request`` (the agent's, rendered) made a summary request: tool use off, in a way that keeps the
        provider's cached prefix, and the agent's prompt-cache key. By default unchanged: the instruction at its
        end forbids tool calls, and a format whose cache keys on the tool choice loses nothing."""
        return dict(request)

    # ------------------------------------------------------------------ answers
    def read_response(self, response: object) -> Reply:
        """A reply (an SDK response object or its dict) as items, usage and how it ended."""
        data = self.data(response)
        usage = self._usage_in(data)
        stop = self._stop(data)
        if stop is not None and not isinstance(stop, str):
            raise InvalidContent(None, "stop reason", f"expected a string, got {type(stop).__name__}")
        reply_id = data.get("id")
        return Reply(self._answer(data), usage, stop, self.incomplete_stops.get(stop) if stop else None,
                     reply_id if isinstance(reply_id, str) else None, self._cache_miss(data))

    def _cache_miss(self, data: JSONObject) -> CacheMiss | None:
        """The cache miss a reply's diagnostics report (none by default: the format has no diagnostics)."""
        return None

    def with_cache_diagnostics(self, request: JSONObject, previous_id: str | None) -> dict[str, JSONValue]:
        """``request`` asking the provider why it misses the cache of the reply ``previous_id`` (unchanged where the
        format has no such diagnostics)."""
        return dict(request)

    def reported_usage(self, response: object) -> Usage | None:
        """The usage a reply (an SDK response object or its dict) reports, ``None`` when it reports none."""
        return self._usage_in(self.data(response))

    def data(self, response: object) -> dict[str, JSONValue]:
        """A reply (an SDK response object or its dict) as a plain dict."""
        return as_data(response)

    def _usage_in(self, data: JSONObject) -> Usage | None:
        return self.read_usage(data[self.usage_field]) if data.get(self.usage_field) else None

    incomplete_stops: Mapping[str, str] = {}
    """The stop reasons meaning an answer is not whole, and what to call them."""

    @abstractmethod
    def _answer(self, data: JSONObject) -> Conversation:
        """The items of a reply's dict."""

    @abstractmethod
    def _stop(self, data: JSONObject) -> str | None:
        """Why the model stopped, in the provider's word."""

    @abstractmethod
    def read_usage(self, usage: object) -> Usage:
        """A ``usage`` object of this format (SDK object or dict) in the neutral shape.

        **This is the anchor of the token count.** ``prompt_tokens`` must be the whole prompt the provider
        read (cached parts included): :class:`~contextfold.tokens.TokenCounter` takes it as the true size of the
        request just sent and counts every later request as that figure plus an estimate of what was added, so
        a figure read wrong (a cached part left out, another field's number, a test server's made-up usage)
        skews every count after it. The first figure is checked against contextfold's own count: under a fifth
        of it (fewer tokens than the request visibly holds), a :class:`~contextfold.errors.UsageMismatch` warning
        and a log line say so. A figure far above the count is not warned of: it is what the request hides
        (a harness's system prompt and tools contextfold was not given).
        """

    def prompt_too_long(self, error: BaseException | str) -> PromptTooLong | None:
        """What an error says about a request that did not fit, or ``None`` when it says something else.

        The one overflow detector: :meth:`contextfold.Context.retry_request` and
        the model summarizers ask it.
        """
        return prompt_too_long(error)

    # ------------------------------------------------------------------ the SDK half (optional)
    client: ProviderClient | None = None
    """The provider's SDK half (:class:`ProviderClient`: a client object, sending, errors, the provider's own
    compaction), ``None`` for a wire-only format (a toy or in-house provider, a format read from logs): its requests
    are rendered by ``Context.prepare`` and its replies read by ``Context.add_response``; the caller sends them."""

    def require_client(self, needed: str) -> ProviderClient:
        """:attr:`client`, or :class:`~contextfold.errors.WireOnlyProvider` naming this provider and ``needed``,
        what asked for it (a model summary, the reference agent, provider compaction)."""
        if self.client is None:
            raise WireOnlyProvider(self.name, needed)
        return self.client

    if not TYPE_CHECKING:  # the old spellings at run time only: a type checker points at the new ones
        def __getattr__(self, name: str) -> object:
            """``adapter.make_client`` and the other SDK members an adapter had before they moved to its client:
            forwarded to :attr:`client` with a :class:`DeprecationWarning` (a wire-only format's
            :class:`~contextfold.errors.WireOnlyProvider`, as before)."""
            if name not in MOVED_TO_CLIENT:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            warnings.warn(f"Adapter.{name} moved to the adapter's SDK client: use adapter.client.{name} "
                          f"(adapter.require_client(...).{name})", DeprecationWarning, stacklevel=2)
            return getattr(self.require_client(name), name)


MOVED_TO_CLIENT = frozenset({
    "sdk", "default_model", "summary_model", "make_client", "error_classes", "call_error", "aclose", "endpoint",
    "arguments", "create", "acreate", "send", "asend", "compaction_shapes", "compaction_call"})
"""The members of :class:`ProviderClient` that were the adapter's until the wire and the SDK were split."""


class ProviderClient(ABC):
    """One provider's SDK half: its official SDK, client objects, how a request is sent and what an error means,
    its default models and its own compaction. The wire stays the :attr:`adapter`'s (a reply is read by it).

    One subclass per SDK family: :class:`~._stainless.StainlessClient` is the base of the Anthropic and OpenAI
    ones (their SDKs are generated alike), Gemini's is its own. An adapter holds its client as
    :attr:`Adapter.client`.
    """

    sdk: SDK
    """The provider's official SDK: package, extra, key and model variables."""
    default_model: str
    """The model the reference agent talks to when none is named."""
    summary_model: str
    """The small model a summary is written by when none is named."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = adapter
        """The wire format this client sends requests of and reads replies with."""

    @abstractmethod
    def make_client(self, options: ClientOptions = SDK_DEFAULTS, *, asynchronous: bool = False) -> object:
        """An SDK client (async when asked), built as ``options`` say."""

    @abstractmethod
    def error_classes(self) -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
        """The SDK's errors for a refused request (where "prompt is too long" arrives), and all its errors."""

    @abstractmethod
    def call_error(self, error: BaseException) -> CallError | None:
        """What an SDK exception says (timeout, connection, status), or ``None`` when it is none of the SDK's."""

    @abstractmethod
    async def aclose(self, client: Any) -> None:
        """Close an async client of :meth:`make_client` and its sockets."""

    @abstractmethod
    def endpoint(self, client: Any) -> Callable[..., Any]:
        """The SDK method that sends a request (sync or async, as ``client`` is)."""

    @abstractmethod
    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        """The keyword arguments of :meth:`endpoint` for ``request`` (what ``Context.prepare`` built); ``timeout_s``
        caps this one call."""

    def create(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
               timeout_s: float | None = None) -> object:
        """Send ``request`` with a sync client; the SDK's response object (for ``Context.add_response``)."""
        return self.endpoint(client)(**self.arguments(client, request, model=model, max_tokens=max_tokens,
                                                      timeout_s=timeout_s))

    async def acreate(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                      timeout_s: float | None = None) -> object:
        """:meth:`create` with an async client."""
        return await self.endpoint(client)(**self.arguments(client, request, model=model, max_tokens=max_tokens,
                                                            timeout_s=timeout_s))

    def send(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
             timeout_s: float | None = None, stream: bool = False) -> Reply:
        """Send ``request`` and read the answer; ``stream`` asks for it as events where the format streams."""
        response = self.create(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return self.adapter.read_response(response)

    async def asend(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                    timeout_s: float | None = None, stream: bool = False) -> Reply:
        """:meth:`send` with an async client."""
        response = await self.acreate(client, request, model=model, max_tokens=max_tokens, timeout_s=timeout_s)
        return self.adapter.read_response(response)

    # ------------------------------------------------------------------ the provider's own compaction
    compaction_shapes: tuple[str, ...] = ()
    """The ways this provider is asked to compact (the first is the default); none: it has no compaction."""

    def compaction_call(self, client: Any, request: JSONObject, *, model: str, max_tokens: int,
                        instructions: str | None = None, shape: str | None = None,
                        timeout_s: float | None = None) -> CompactionCall:
        """The call asking the provider to compact what ``request`` (what ``Context`` rendered) holds, by ``shape``.

        :class:`ContextfoldError` when the provider has no compaction of its own, or not that shape.
        """
        raise ContextfoldError(f"{self.adapter.title} has no compaction of its own; contextfold's summarizers do it")

    def _compaction_shape(self, shape: str | None) -> str:
        chosen = shape or (self.compaction_shapes[0] if self.compaction_shapes else None)
        if chosen not in self.compaction_shapes:
            raise ContextfoldError(f"{self.adapter.title} compacts by "
                                   f"{', '.join(self.compaction_shapes) or 'no request'}, not {shape!r}")
        return chosen


@dataclass(frozen=True)
class CompactionCall:
    """A request for a provider's own compaction: the SDK method to call (sync or async, as the client is) and its
    keyword arguments. The reply holds the provider's compaction (read by :meth:`Adapter.read_response`)."""

    method: Callable[..., Any]
    arguments: JSONObject

    def send(self) -> object:
        """Call it with a sync client: the SDK's response object."""
        return self.method(**self.arguments)

    async def asend(self) -> object:
        """Call it with an async client."""
        return await self.method(**self.arguments)


def as_data(response: object) -> dict[str, Any]:
    """An SDK response object or a dict as a plain dict without ``None`` fields (absent on the wire)."""
    if hasattr(response, "model_dump"):  # without warnings: the SDK's types do not expect every item a server echoes
        response = response.model_dump(exclude_none=True, warnings=False)
    if not isinstance(response, Mapping):
        raise InvalidContent(None, "response", f"expected an object, got {type(response).__name__}")
    return dict(response)


class MessageListAdapter(Adapter):
    """A format whose request is a message list and tools, its system prompt a leading message (OpenAI's two).

    Built on the format's request mappings: ``read_list(messages, tools,
    known_call_ids=...)``, ``write_list(conversation)`` and ``write_tools(conversation)``.
    """

    def __init__(
        self,
        names: tuple[str, str, str],
        read_list: Callable[..., Conversation],
        write_list: Callable[[Conversation], list[dict[str, JSONValue]]],
        write_tools: Callable[[Conversation], list[dict[str, JSONValue]]],
    ) -> None:
        self.name, self.title, self.messages_key = names
        self.read_list = read_list
        self.write_list = write_list
        self.write_tools = write_tools

    def _read(self, messages: object, system: object, tools: object, known_call_ids: Iterable[str]) -> Conversation:
        if system is not None:
            raise InvalidContent(None, "system", f"{self.title} takes the system prompt as a leading system message")
        return self.read_list(messages, tools, known_call_ids=known_call_ids)

    def write(self, conversation: Conversation) -> dict[str, Any]:
        return {self.messages_key: self.write_list(conversation), "tools": self.write_tools(conversation)}

    def write_header(self, header: Header) -> WireHeader:
        conversation = Conversation(header=header)
        return WireHeader(present_fields(tools=self.write_tools(conversation)), self.write_list(conversation))

    def read_usage(self, usage: object) -> Usage:
        return openai_usage(usage)
