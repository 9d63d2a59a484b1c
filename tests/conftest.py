"""Shared fixtures: where the shared corpus and tokenizers are, skipping clearly when absent (failing under CI)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import configuration, settings

settings.register_profile("no-database", database=None)
settings.load_profile("no-database")  # hypothesis would keep examples in .hypothesis/ of the checkout


@pytest.hookimpl(trylast=True)  # after pytest made its temporary folder factory
def pytest_configure(config: pytest.Config) -> None:
    """Hypothesis keeps its caches in the run's temporary folder, not .hypothesis/ of the checkout: tests write
    only to temporary folders (set before collection, which already reads and writes them)."""
    configuration.set_hypothesis_home_dir(config._tmp_path_factory.mktemp("hypothesis"))

SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED", Path(__file__).resolve().parents[2] / "shared"))
CORPUS = SHARED / "corpus"
TOKENIZERS = SHARED / "tokenizers"


def skip_or_fail(reason: str) -> None:
    """Skip a test that cannot run here, saying why; under ``CI=true`` fail it instead: CI runs every test."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI=true runs every test, so this is a failure, not a skip", pytrace=False)
    pytest.skip(reason)


def need_shared(marker: Path, what: str) -> None:
    """Skip (fail under CI) unless ``marker``, a file of ../shared, is there."""
    if not marker.exists():
        skip_or_fail(f"{what} not found at {marker.parent} (set CONTEXTFOLD_SHARED to the shared/ folder)")


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """The shared corpus of recorded agent sessions (../shared/corpus)."""
    need_shared(CORPUS / "SOURCES.md", "the shared corpus")
    return CORPUS


@pytest.fixture(scope="session")
def referee(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    """The reference scorer in ../shared/referee, imported as an independent oracle (never part of the project)."""
    need_shared(SHARED / "referee" / "strict.py", "the referee")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path_factory.mktemp("tiktoken")))  # where it seeds its tokenizer
        patch.syspath_prepend(str(SHARED))
        from referee import cli, loaders, recall, strict  # noqa: F401 - bound on the package, which the tests use
        yield sys.modules["referee"]


@pytest.fixture(scope="session")
def tokenizers_dir() -> Path:
    """Offline tiktoken files (../shared/tokenizers)."""
    need_shared(TOKENIZERS / "o200k_base.tiktoken", "the offline tokenizer files")
    return TOKENIZERS


@pytest.fixture
def fake_llm():
    """A started :class:`contextfold.testing.fake_llm.FakeLLMServer` on 127.0.0.1 (Anthropic and OpenAI wire formats), stopped after."""
    from contextfold.testing.fake_llm import FakeLLMServer

    with FakeLLMServer() as server:
        yield server


def _server(name: str, start):
    """A session-wide throwaway server; skipped with the reason when it cannot run here, failed under CI."""
    from store_servers import missing

    reason = missing(name)
    if reason is not None:
        skip_or_fail(reason)
    with start() as url:
        yield url


@pytest.fixture(scope="session")
def postgres_server_url():
    """A throwaway PostgreSQL on 127.0.0.1 for the whole run (initdb + pg_ctl in a temp folder)."""
    from store_servers import postgres_server

    yield from _server("postgresql", postgres_server)


@pytest.fixture(scope="session")
def redis_server_url():
    """A throwaway redis-server on 127.0.0.1 for the whole run, without persistence."""
    from store_servers import redis_server

    yield from _server("redis", redis_server)


@pytest.fixture(params=["jsonl", "sqlite", "postgresql", "redis"])
def store_url(request, tmp_path: Path) -> str:
    """An empty store of each backend, as a URL: each test gets its own folder, schema or flushed database."""
    from store_servers import empty_store

    return empty_store(request.param, request, tmp_path)


@pytest.fixture(params=["sqlite", "postgresql", "redis"])
def shared_store_url(request, tmp_path: Path) -> str:
    """An empty store of each backend many processes may write one session of (all but the JSONL folder)."""
    from store_servers import empty_store

    return empty_store(request.param, request, tmp_path)
