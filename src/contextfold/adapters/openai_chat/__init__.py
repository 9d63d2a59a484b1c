"""OpenAI Chat Completions (and every server speaking it): the wire format (:mod:`.wire`) and the provider object
that owns it with the ``openai`` SDK (:mod:`.provider`)."""

from .provider import OpenAIChat, OpenAIClient, reply_from_chunks
from .wire import from_openai, to_openai, tools_to_openai

__all__ = ["OpenAIChat", "OpenAIClient", "from_openai", "reply_from_chunks", "to_openai", "tools_to_openai"]
