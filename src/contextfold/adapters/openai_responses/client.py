"""The Responses API's SDK half: ``client.responses.create`` through the ``openai`` SDK (:class:`~..openai_chat.client
.OpenAIClient`'s client objects and models), and OpenAI's own compaction. The wire is :mod:`.provider`'s."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ...conversation import JSONObject, JSONValue
from .._stainless import call_timeout
from ..base import CompactionCall
from ..openai_chat.client import OpenAIClient

if TYPE_CHECKING:
    from openai import AsyncOpenAI, OpenAI

COMPACTION_TRIGGER = {"type": "compaction_trigger"}
"""The input item asking for compaction in band; it must be the last input item."""
_COMPACT_FIELDS = ("input", "prompt_cache_key", "prompt_cache_options")
"""The fields of a Responses request that ``responses.compact`` takes too."""


class ResponsesClient(OpenAIClient):
    """Responses requests through the ``openai`` SDK; the reply limit is ``max_output_tokens``."""

    def endpoint(self, client: OpenAI | AsyncOpenAI) -> Callable[..., object]:
        return client.responses.create

    def arguments(self, client: object, request: JSONObject, *, model: str, max_tokens: int,
                  timeout_s: float | None = None) -> dict[str, JSONValue]:
        body = {key: value for key, value in request.items() if value}  # an empty tool list is refused
        return {"model": model, "max_output_tokens": max_tokens, **body, **call_timeout(timeout_s)}

    compaction_shapes = ("trigger", "compact")

    def compaction_call(self, client: Any, request: Mapping[str, Any], *, model: str, max_tokens: int,
                        instructions: str | None = None, shape: str | None = None,
                        timeout_s: float | None = None) -> CompactionCall:
        """OpenAI's compaction of what ``request`` holds: ``"trigger"`` sends it with a ``compaction_trigger`` item
        last (the reply is one ``compaction`` item), ``"compact"`` sends its input to ``responses.compact`` (the
        reply is the user messages and one ``compaction`` item). Neither takes instructions for the summary:
        ``instructions`` are not sent."""
        if self._compaction_shape(shape) == "trigger":
            body = {**request, "input": [*request.get("input", ()), COMPACTION_TRIGGER]}
            return CompactionCall(client.responses.create,
                                  self.arguments(client, body, model=model, max_tokens=max_tokens, timeout_s=timeout_s))
        kept = {key: request[key] for key in _COMPACT_FIELDS if request.get(key)}  # the endpoint takes no tools
        return CompactionCall(client.responses.compact, {"model": model, **kept, **call_timeout(timeout_s)})
