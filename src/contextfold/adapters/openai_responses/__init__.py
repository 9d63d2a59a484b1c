"""OpenAI's Responses API: its wire format and its compaction item (:mod:`.wire`)."""

from .wire import OpenAIResponses, from_responses, to_responses, tools_to_responses

__all__ = ["OpenAIResponses", "from_responses", "to_responses", "tools_to_responses"]
