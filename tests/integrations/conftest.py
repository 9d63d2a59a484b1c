"""Fixtures of the framework integration tests: the scripted tool-loop server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from scripted_server import ToolLoopServer


@pytest.fixture
def server() -> Iterator[ToolLoopServer]:
    """A started :class:`~scripted_server.ToolLoopServer` (60 rounds, 16,000-token window), stopped after."""
    with ToolLoopServer() as model:
        yield model
