"""The only code that knows a wire format: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses.

One adapter object per provider (:class:`AnthropicMessages`, :class:`OpenAIChat`,
:class:`OpenAIResponses`, all :class:`Adapter` s), chosen by name with
:func:`adapter_for`, owns every wire shape of its format: requests, replies,
usage, prompt-cache marks and "prompt is too long" errors. What needs the
provider's SDK (client objects, sending, its errors, the provider's own
compaction) is the adapter's :attr:`~Adapter.client`, a :class:`ProviderClient`
(``None`` for a format with no SDK). The free functions below are the request
mappings those objects are built on.

Each adapter reads a provider's request lists into a neutral
:class:`~contextfold.conversation.Conversation` and writes one back; for input
that came from the same format the round trip is exact (``to_x(from_x(m)) ==
m``). Fields the neutral model has no slot for ride in ``Block.extra`` and
``Item.meta`` (see :mod:`._reading` for the convention) and are written only to
the format they came from.

Across formats (``to_openai(from_anthropic(...))``) the content is mapped
(data URLs and base64 sources, tool calls with their ids, results, documents)
and format hints (``cache_control``, ``detail``, item ids) are left behind.
What the target cannot carry raises a typed error naming the item and field
(:class:`~contextfold.errors.InvalidToolArguments`,
:class:`~contextfold.errors.InvalidContent`); reasoning it has no slot for is
dropped with a :class:`LossyConversion` warning.

Agent frameworks that keep their history in types of their own have adapters
of the same kind beside these, used by :mod:`contextfold.integrations`:
:mod:`.strands` (Strands' Bedrock Converse messages), :mod:`.pydantic_ai`
(pydantic-ai's ``ModelMessage`` objects), :mod:`.langchain` (LangChain
message objects) and :mod:`.gemini` (google-genai ``Content`` lists, as Gemini
and Google ADK hold them, and ADK events), each with its exact round trip.

Reading errors name the index in the list the caller passed and the field
(``content[2].tool_use_id``); writing errors name the index in
``conversation.items`` (``None`` for header items) and the neutral field path.
"""

from ._reading import MAX_BLOCK_BYTES, MAX_NESTING, check_json, parse_arguments
from ._writing import LossyConversion
from .anthropic import AnthropicMessages, from_anthropic, to_anthropic, tools_to_anthropic
from .base import Adapter, ProviderClient, Reply, WireHeader
from .openai_chat import OpenAIChat, from_openai, reply_from_chunks, to_openai, tools_to_openai
from .openai_responses import OpenAIResponses, from_responses, to_responses, tools_to_responses
from .overflow import PromptTooLong, prompt_too_long
from .registry import PROVIDERS, adapter_for, is_prompt_too_long, register

__all__ = [
    "MAX_BLOCK_BYTES",
    "MAX_NESTING",
    "PROVIDERS",
    "Adapter",
    "AnthropicMessages",
    "LossyConversion",
    "OpenAIChat",
    "OpenAIResponses",
    "PromptTooLong",
    "ProviderClient",
    "Reply",
    "WireHeader",
    "adapter_for",
    "check_json",
    "from_anthropic",
    "from_openai",
    "from_responses",
    "is_prompt_too_long",
    "parse_arguments",
    "prompt_too_long",
    "register",
    "reply_from_chunks",
    "to_anthropic",
    "to_openai",
    "to_responses",
    "tools_to_anthropic",
    "tools_to_openai",
    "tools_to_responses",
]
