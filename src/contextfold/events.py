"""What a stage (or the facade) did: the one record every layer reports changes with.

It sits with the model because every layer above makes or reads events: the
stages, the facade, the stores that journal them, replay and the integrations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .conversation import JSONValue
from .redaction import redact_credentials


@dataclass(frozen=True)
class Event:
    """Something a stage (or the facade) did, with what it touched and what it saved.

    ``items`` are the ids of the items changed, removed or added; token
    figures are for the whole request before and after. ``calls`` holds the
    model requests a summarizer made, as ``(Conversation, Usage | None)``
    pairs, so replay can price them; it is not part of the serialized form.
    """

    stage: str
    action: str
    items: tuple[str, ...] = ()
    tokens_before: int = 0
    tokens_after: int = 0
    detail: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)
    calls: tuple[Any, ...] = field(default=(), compare=False, repr=False)  # model requests made (summarizer)

    def __post_init__(self) -> None:
        """An event is shown, logged, journaled and stored: its texts (a provider's or a driver's error, a
        store URL) are redacted of credentials once, here (:func:`~contextfold.redaction.redact_credentials`)."""
        object.__setattr__(self, "detail", redact_credentials(self.detail) if self.detail else self.detail)
        if any(isinstance(value, str) for value in self.data.values()):
            object.__setattr__(self, "data", {key: redact_credentials(value) if isinstance(value, str) else value
                                              for key, value in self.data.items()})

    @property
    def saved_tokens(self) -> int:
        return self.tokens_before - self.tokens_after

    def to_dict(self) -> dict[str, JSONValue]:
        return {
            "stage": self.stage,
            "action": self.action,
            "items": list(self.items),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "detail": self.detail,
            "data": dict(self.data),
        }
