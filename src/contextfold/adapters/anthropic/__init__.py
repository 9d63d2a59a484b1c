"""Anthropic: the Messages API's wire format (:mod:`.wire`), prompt-cache marks (:mod:`.cache`), server-side
context edits (:mod:`.context`), the provider object that owns them (:mod:`.provider`) and its SDK half, the
``anthropic`` SDK (:mod:`.client`)."""

from .client import AnthropicClient
from .provider import AnthropicMessages
from .wire import from_anthropic, to_anthropic, tools_to_anthropic

__all__ = ["AnthropicClient", "AnthropicMessages", "from_anthropic", "to_anthropic", "tools_to_anthropic"]
