"""OpenAI's Responses API: the wire format (:mod:`.wire`) and the provider object that owns it with the ``openai``
SDK and the compaction item (:mod:`.provider`)."""

from .provider import OpenAIResponses, ServerCompacted
from .wire import from_responses, to_responses, tools_to_responses

__all__ = ["OpenAIResponses", "ServerCompacted", "from_responses", "to_responses", "tools_to_responses"]
