"""contextfold's own session files (``format: "contextfold-session-1"``), as ``contextfold compact`` writes them.

One JSON object ``{format, header, items}`` in the neutral form of
:mod:`contextfold.codec`: lossless, so a compacted session reads back exactly
as it was written (summaries, restored files and item meta included). One
conversation per file.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from ..codec import header_from_dict, item_from_dict
from ..conversation import Conversation
from ..errors import InvalidMessage
from ._common import Source, field_of

FORMAT = "contextfold-session-1"

T = TypeVar("T")


def matches(source: Source) -> bool:
    doc = source.document
    return isinstance(doc, dict) and doc.get("format") == FORMAT


def load(source: Source) -> list[Conversation]:
    doc = source.require_document(dict)
    if doc.get("format") != FORMAT:
        raise source.error("$.format", f"expected {FORMAT!r}, found {doc.get('format')!r}")
    header = _read(source, "$.header", header_from_dict, field_of(source, doc, "header", dict, "$"))
    conversation = Conversation(header=header)
    for index, record in enumerate(field_of(source, doc, "items", list, "$")):
        conversation.append(_read(source, f"$.items[{index}]", item_from_dict, record))
    return [conversation]


def _read(source: Source, where: str, make: Callable[[object], T], record: object) -> T:
    """``make(record)``, a malformed record a SessionFormatError naming ``where`` and the field."""
    try:
        return make(record)
    except InvalidMessage as error:  # the codec checks every field, naming it
        raise source.error(f"{where}.{error.field}", f"not a valid record: {error.reason}") from None
