"""Anthropic: the Messages API's wire format (:mod:`.wire`), prompt-cache marks (:mod:`.cache`), server-side
context edits (:mod:`.context`), and the provider object that owns them with the SDK (:mod:`.provider`)."""

from .provider import AnthropicMessages
from .wire import from_anthropic, to_anthropic, tools_to_anthropic

__all__ = ["AnthropicMessages", "from_anthropic", "to_anthropic", "tools_to_anthropic"]
