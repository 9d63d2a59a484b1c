"""Step 3, send: the view written for the wire, with this request's reminders and the cache diagnostics asked for.

Each provider's :class:`~contextfold.rendering.Renderer` is kept between
requests (only new messages are rendered again). Reminders are attached last,
after every cache breakpoint, and never kept (:mod:`contextfold.adapters.reminders`);
their size is reserved in the window and taken out of the usage the provider
reports, so the count stays the view's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..adapters import adapter_for
from ..adapters.reminders import checked, wrapped
from ..conversation import Conversation
from ..rendering import Renderer


class Sending:
    """How one Context's requests are written: its default ``provider``, and whether to ask for cache diagnostics
    (``cache_diagnostics()``, the Context's setting now)."""

    def __init__(self, provider: str, count_text: Callable[[str], int], cache_diagnostics: Callable[[], bool]) -> None:
        self._provider = provider
        self._count_text = count_text
        self._cache_diagnostics = cache_diagnostics
        self.last_response_id: str | None = None  # the reply a diagnosis of the next request's cache refers to
        self._renderers: dict[str, Renderer] = {}

    def reminders(self, reminders: Sequence[str]) -> tuple[tuple[str, ...], int]:
        """``reminders`` checked, and the tokens they take (reserved in the window for this request)."""
        texts = checked(reminders)
        return texts, sum(self._count_text(wrapped(text)) for text in texts)

    def request(self, view: Conversation, provider: str | None, reminders: Sequence[str]) -> dict[str, Any]:
        """``view`` rendered with ``reminders``, asking for the provider's cache diagnostics against the last reply
        when enabled."""
        request = self.render(view, provider, reminders)
        if not self._cache_diagnostics():
            return request
        return adapter_for(provider or self._provider).with_cache_diagnostics(request, self.last_response_id)

    def render(self, view: Conversation, provider: str | None, reminders: Sequence[str] = ()) -> dict[str, Any]:
        """``view`` as a request body for ``provider`` (incrementally: only new messages are rendered)."""
        adapter = adapter_for(provider or self._provider)
        renderer = self._renderers.get(adapter.name)
        if renderer is None:
            renderer = self._renderers[adapter.name] = Renderer(adapter)
        return renderer.render(view, checked(reminders))
