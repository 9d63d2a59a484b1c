"""Property tests in two sizes: a small draw in the main run, the full sweep in CI's slow step.

A property that draws hundreds of examples costs minutes on a loaded 2-core machine. The main run (the README's
test line, CI's steps 1 and 2) still checks it on a few dozen examples, so a property broken outright fails there;
the full number of examples runs as the same property marked ``slow`` (``python3 -m pytest -m slow``, CI's step 3).
The full sizes are two to four times the main ones (some were larger when they ran in the main step): what moves
to step 3 still counts against CI's whole run, which must stay under 30 minutes.

Bind both tests to ``test_`` names in the module, so pytest collects each::

    def anthropic_round_trip(request): ...

    test_anthropic_round_trip, test_anthropic_round_trip_sweep = ROUND_TRIPS.tests(anthropic_round_trip, requests())
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis.strategies import SearchStrategy

Test = Callable[..., None]


class Sweep:
    """The hypothesis settings of a property in two sizes: ``main`` examples in every run, ``full`` under ``-m slow``."""

    def __init__(self, main: int, full: int, **options: Any) -> None:
        assert main < full, "the main run draws fewer examples than the sweep"
        self.main = settings(max_examples=main, deadline=None, **options)
        self.full = settings(max_examples=full, deadline=None, **options)

    def tests(self, prop: Test, *strategies: SearchStrategy[Any], **named: SearchStrategy[Any]) -> tuple[Test, Test]:
        """``prop`` under ``@given(*strategies, **named)`` as (the main run's test, the full sweep marked slow).

        Each is its own ``@given`` wrapper (hypothesis keeps the settings on the wrapper), sharing ``prop``'s body;
        ``prop``'s own pytest marks (``filterwarnings``, ``parametrize``) are carried by both.
        """
        small = self.main(given(*strategies, **named)(prop))
        sweep = self.full(given(*strategies, **named)(prop))
        return small, pytest.mark.slow(sweep)
