"""Google Gemini (google-genai ``Content`` lists, as Gemini and Google ADK hold them): its wire format (:mod:`.wire`)."""

from .wire import from_adk_events, from_genai, system_instruction_to_genai, to_genai

__all__ = ["from_adk_events", "from_genai", "system_instruction_to_genai", "to_genai"]
