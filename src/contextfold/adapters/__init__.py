"""The only code that knows a wire format: Anthropic Messages, OpenAI Chat Completions, OpenAI Responses.

Each adapter reads a provider's request lists into a neutral
:class:`~contextfold.conversation.Conversation` and writes one back; for input
that came from the same format the round trip is exact (``to_x(from_x(m)) ==
m``). Fields the neutral model has no slot for ride in ``Block.extra`` and
``Item.meta`` (see :mod:`._common` for the convention) and are written only to
the format they came from.

Across formats (``from_anthropic(...).to_openai()``) the content is mapped
(data URLs and base64 sources, tool calls with their ids, results, documents)
and format hints (``cache_control``, ``detail``, item ids) are left behind.
What the target cannot carry raises a typed error naming the item and field
(:class:`~contextfold.errors.InvalidToolArguments`,
:class:`~contextfold.errors.InvalidContent`); reasoning it has no slot for is
dropped with a :class:`LossyConversion` warning.

Reading errors name the index in the list the caller passed and the field
(``content[2].tool_use_id``); writing errors name the index in
``conversation.items`` (``None`` for header items) and the neutral field path.
"""

from ._common import MAX_BLOCK_BYTES, LossyConversion
from .anthropic import from_anthropic, to_anthropic, tools_to_anthropic
from .openai_chat import from_openai, to_openai, tools_to_openai
from .openai_responses import from_responses, to_responses, tools_to_responses

__all__ = [
    "MAX_BLOCK_BYTES",
    "LossyConversion",
    "from_anthropic",
    "from_openai",
    "from_responses",
    "to_anthropic",
    "to_openai",
    "to_responses",
    "tools_to_anthropic",
    "tools_to_openai",
    "tools_to_responses",
]
