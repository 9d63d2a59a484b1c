"""Shared fixtures: where the shared corpus and tokenizers are, skipping clearly when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CORPUS = SHARED / "corpus"
TOKENIZERS = SHARED / "tokenizers"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of recorded agent sessions (../shared/corpus)."""
    if not (CORPUS / "SOURCES.md").exists():
        pytest.skip(f"shared corpus not found at {CORPUS} (set CONTEXTFOLD_SHARED to the shared/ folder)")
    return CORPUS


@pytest.fixture(scope="session")
def tokenizers_dir() -> Path:
    """Offline tiktoken files (../shared/tokenizers)."""
    if not (TOKENIZERS / "o200k_base.tiktoken").exists():
        pytest.skip(f"offline tokenizer files not found at {TOKENIZERS}")
    return TOKENIZERS


@pytest.fixture
def fake_llm():
    """A started :class:`fake_llm_server.FakeLLMServer` on 127.0.0.1 (Anthropic and OpenAI wire formats), stopped after."""
    from fake_llm_server import FakeLLMServer

    with FakeLLMServer() as server:
        yield server
