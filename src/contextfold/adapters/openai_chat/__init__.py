"""OpenAI Chat Completions (and every server speaking it): its wire format (:mod:`.wire`)."""

from .wire import OpenAIChat, from_openai, reply_from_chunks, to_openai, tools_to_openai

__all__ = ["OpenAIChat", "from_openai", "reply_from_chunks", "to_openai", "tools_to_openai"]
