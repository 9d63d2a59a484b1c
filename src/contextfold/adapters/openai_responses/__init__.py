"""OpenAI's Responses API: the wire format (:mod:`.wire`), the provider object that owns it and the compaction item
(:mod:`.provider`), and its SDK half, the ``openai`` SDK and OpenAI's own compaction (:mod:`.client`)."""

from .client import ResponsesClient
from .provider import OpenAIResponses, ServerCompacted
from .wire import from_responses, to_responses, tools_to_responses

__all__ = ["OpenAIResponses", "ResponsesClient", "ServerCompacted", "from_responses", "to_responses",
           "tools_to_responses"]
