"""Google Gemini: google-genai ``Content`` lists, as Gemini and Google ADK hold them (:mod:`.wire`), the provider
object that owns them (:mod:`.provider`) and its SDK half, the ``google-genai`` SDK (:mod:`.client`)."""

from .client import GeminiClient
from .provider import Gemini
from .wire import adk_event_id, from_adk_events, from_genai, system_instruction_to_genai, to_genai, tools_from_genai, tools_to_genai

__all__ = ["Gemini", "GeminiClient", "adk_event_id", "from_adk_events", "from_genai", "system_instruction_to_genai", "to_genai", "tools_from_genai",
           "tools_to_genai"]
