"""Choosing a provider by name: the one place the provider-name switch is written.

Each provider is one object (an :class:`~.base.Adapter`, in its own folder)
owning its wire format and overflow errors, and holding its SDK half (its
:attr:`~.base.Adapter.client`: client objects, models, sending, the provider's
compaction) when it has an SDK; adding a provider is its folder plus one entry
in :data:`_ADAPTERS` (built in) or one call of :func:`register` (anyone's, from
their own code).
"""

from __future__ import annotations

from ..errors import ContextfoldError
from .anthropic import AnthropicMessages
from .base import Adapter
from .gemini import Gemini
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses

ANTHROPIC = AnthropicMessages()
OPENAI_CHAT = OpenAIChat()
RESPONSES = OpenAIResponses()
"""The one shared instance of each adapter; named, for the features only one format has
(Anthropic's server-side context edits, the Responses compaction endpoint)."""

_ADAPTERS: dict[str, Adapter] = {a.name: a for a in (ANTHROPIC, OPENAI_CHAT, RESPONSES, Gemini())}
PROVIDERS = tuple(_ADAPTERS)
"""The provider names :func:`adapter_for` knows: ``anthropic``, ``openai`` (Chat Completions), ``responses``,
``gemini``."""


def register(adapter: Adapter) -> Adapter:
    """Make ``adapter`` choosable by its name everywhere a provider is named (``Context(provider=...)``,
    :func:`adapter_for`, :func:`is_prompt_too_long`); returns it. A wire-only format (no SDK) is complete as it is.

    :class:`ContextfoldError` when another adapter already holds the name (registering the same one again is
    harmless: a module imported twice).
    """
    held = _ADAPTERS.setdefault(adapter.name, adapter)
    if held is not adapter:
        raise ContextfoldError(f"provider {adapter.name!r} is already registered ({held.title})")
    return adapter


def adapter_for(provider: str) -> Adapter:
    """The adapter of ``provider``; :class:`ContextfoldError` for a name no adapter is registered by."""
    adapter = _ADAPTERS.get(provider)
    if adapter is None:
        raise ContextfoldError(f"unknown provider {provider!r}; expected one of {', '.join(_ADAPTERS)}")
    return adapter


def is_prompt_too_long(error: BaseException | str) -> bool:
    """Whether a provider error says the request did not fit, in any known provider's wording.

    For callers that do not know which provider answered (proxies and OpenAI-compatible servers mix the
    wordings); each adapter's :meth:`~.base.Adapter.prompt_too_long` decides, so a new provider's wording is
    recognised here by being registered.
    """
    return any(adapter.prompt_too_long(error) is not None for adapter in _ADAPTERS.values())
