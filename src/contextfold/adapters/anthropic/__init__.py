"""Anthropic's Messages API: its wire format (:mod:`.wire`), prompt-cache marks (:mod:`.cache`) and server-side
context edits (:mod:`.context`)."""

from .wire import AnthropicMessages, from_anthropic, to_anthropic, tools_to_anthropic

__all__ = ["AnthropicMessages", "from_anthropic", "to_anthropic", "tools_to_anthropic"]
