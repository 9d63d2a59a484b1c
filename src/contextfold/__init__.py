"""contextfold: keep long-running LLM agents inside their context window."""

from .adapters._common import LossyConversion
from .conversation import (
    Block,
    Conversation,
    Document,
    Header,
    Image,
    Item,
    Opaque,
    RedactedThinking,
    Repair,
    Round,
    Summary,
    Text,
    Thinking,
    ToolCall,
    ToolResult,
    ToolSpec,
    Violation,
)
from .errors import (
    ContextfoldError,
    EmptyContent,
    InvalidContent,
    InvalidConversation,
    InvalidEncoding,
    InvalidMessage,
    InvalidToolArguments,
    OversizedBlock,
    SessionFormatError,
    SummarizerError,
    TokenizerUnavailable,
    TranscriptCorrupt,
    TranscriptError,
    UnknownModel,
    UnknownRole,
    UnknownSessionFormat,
)
from .context import Context, is_prompt_too_long
from .limits import ModelLimits, compaction_threshold, model_limits, register_model
from .pipeline.base import Event, Policy, Prices, Rule
from .tokens import Estimator, TokenCounter
from .transcript import Transcript
from .usage import Usage

__version__ = "0.1.0"

__all__ = [
    "Block",
    "ContextfoldError",
    "Conversation",
    "Document",
    "EmptyContent",
    "Estimator",
    "Header",
    "Image",
    "InvalidContent",
    "InvalidConversation",
    "InvalidEncoding",
    "InvalidMessage",
    "InvalidToolArguments",
    "Item",
    "LossyConversion",
    "ModelLimits",
    "Opaque",
    "OversizedBlock",
    "RedactedThinking",
    "Repair",
    "Round",
    "SessionFormatError",
    "SummarizerError",
    "Summary",
    "Text",
    "Thinking",
    "TokenCounter",
    "TokenizerUnavailable",
    "ToolCall",
    "ToolResult",
    "ToolSpec",
    "TranscriptCorrupt",
    "TranscriptError",
    "UnknownModel",
    "UnknownRole",
    "UnknownSessionFormat",
    "Usage",
    "Violation",
    "compaction_threshold",
    "model_limits",
    "register_model",
]
