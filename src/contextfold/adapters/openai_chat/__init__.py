"""OpenAI Chat Completions (and every server speaking it): the wire format (:mod:`.wire`, a stream joined in
:mod:`.stream`), the provider object that owns it (:mod:`.provider`) and its SDK half, the ``openai`` SDK
(:mod:`.client`)."""

from .client import ChatClient, OpenAIClient
from .provider import OpenAIChat, OpenAIFormat, reply_from_chunks
from .wire import from_openai, to_openai, tools_to_openai

__all__ = ["ChatClient", "OpenAIChat", "OpenAIClient", "OpenAIFormat", "from_openai", "reply_from_chunks", "to_openai",
           "tools_to_openai"]
