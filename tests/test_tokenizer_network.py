"""The token counter and the network: ``--tokenizer auto`` never uses it, an explicit download is bounded.

Every test runs contextfold in a child process whose proxies point at a local
server that accepts connections and never answers (a network that hangs), and
whose tiktoken cache is an empty folder of the test's own, so a download
attempt is seen (a connection) and cannot reach anything.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from contextfold.tokens.text import OFFLINE_HINT, TOKENIZERS_DIR_ENV, _cache_key


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts every connection, reads nothing and never answers."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port = self.socket.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:  # closed
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def hanging_network(tmp_path: Path) -> Iterator[tuple[SilentServer, dict[str, str]]]:
    """The silent server and an environment that sends every HTTP(S) request through it, with an empty cache."""
    server = SilentServer()
    proxy = f"http://127.0.0.1:{server.port}"
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("no_proxy", TOKENIZERS_DIR_ENV.lower())}
    env.pop(TOKENIZERS_DIR_ENV, None)
    env.update({name: proxy for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")})
    (tmp_path / "tiktoken-cache").mkdir()
    env["TIKTOKEN_CACHE_DIR"] = str(tmp_path / "tiktoken-cache")
    yield server, env
    server.close()


def contextfold(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "contextfold", *args], check=False, env=env, capture_output=True,
                          text=True, timeout=120)


DEMO = ("demo", "--rounds", "5", "--window", "16000", "--delay", "0")


def test_auto_counts_with_the_estimate_without_touching_the_network(hanging_network) -> None:
    server, env = hanging_network
    result = contextfold(env, *DEMO)  # --tokenizer auto is the default
    assert result.returncode == 0, result.stderr
    assert server.accepted == [], "auto tried the network"
    assert "counted with heuristic" in result.stdout  # the demo says which counter it used
    warning = [line for line in result.stderr.splitlines() if "block-aware estimate" in line]
    assert len(warning) == 1 and OFFLINE_HINT in warning[0] and "Traceback" not in result.stderr


def test_auto_counts_exactly_from_the_offline_files(hanging_network, tokenizers_dir: Path) -> None:
    server, env = hanging_network
    result = contextfold({**env, TOKENIZERS_DIR_ENV: str(tokenizers_dir)}, *DEMO)
    assert result.returncode == 0, result.stderr
    assert "counted with tiktoken:o200k_base" in result.stdout and "estimate" not in result.stderr
    assert server.accepted == []


def test_auto_counts_exactly_from_tiktokens_cache(hanging_network, tokenizers_dir: Path) -> None:
    server, env = hanging_network
    shutil.copy(tokenizers_dir / "o200k_base.tiktoken", Path(env["TIKTOKEN_CACHE_DIR"]) / _cache_key("o200k_base"))
    result = contextfold(env, *DEMO)
    assert result.returncode == 0, result.stderr
    assert "counted with tiktoken:o200k_base" in result.stdout
    assert server.accepted == []


def test_a_damaged_cached_file_is_not_used_and_not_downloaded_again_by_auto(hanging_network) -> None:
    server, env = hanging_network
    (Path(env["TIKTOKEN_CACHE_DIR"]) / _cache_key("o200k_base")).write_bytes(b"not a BPE file\n")
    result = contextfold(env, *DEMO)
    assert result.returncode == 0, result.stderr
    assert "counted with heuristic" in result.stdout and server.accepted == []


def test_an_explicit_download_gives_up_within_its_bound_with_one_line(hanging_network) -> None:
    server, env = hanging_network
    code = ("from contextfold.tokens import load_encoding\n"
            "from contextfold.errors import TokenizerUnavailable\n"
            "try:\n    load_encoding('o200k_base', timeout_s=0.5)\n"
            "except TokenizerUnavailable as error:\n    print(error)\n")
    result = subprocess.run([sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr
    assert "could not download o200k_base.tiktoken within 0.5 s" in result.stdout and OFFLINE_HINT in result.stdout
    assert len(server.accepted) == 1  # it did try, through the proxy, and stopped waiting
    assert list(Path(env["TIKTOKEN_CACHE_DIR"]).iterdir()) == []  # nothing half-written in the cache


def _recording(path: Path) -> Path:
    """A small generated session in tau-bench's file format."""
    from contextfold.adapters import to_openai
    from contextfold.synthetic import generate_session

    path.write_text(json.dumps([{"task_id": 0, "trial": 0, "reward": 1.0, "info": {},
                                 "traj": to_openai(generate_session(rounds=4, seed=1))}]))
    return path


def _replay_or_bench(command: str, tmp_path: Path) -> tuple[str, ...]:
    recording = str(_recording(tmp_path / "chats.json"))
    if command == "replay":
        return ("replay", recording, "--window", "8000", "--strategy", "none", "--json")
    return ("bench", recording, "--window", "8000", "--strategies", "none", "--jobs", "1", "--no-charts",
            "--out", str(tmp_path / "out"))


def _counted_with(command: str, result: subprocess.CompletedProcess[str], tmp_path: Path) -> str:
    """The counter the figures say they were made with."""
    if command == "replay":
        (row,) = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        return str(row["tokenizer"])
    return str(json.loads((tmp_path / "out" / "results.json").read_text())["tokenizer"])


@pytest.mark.parametrize("command", ["replay", "bench"])
def test_replay_and_bench_count_with_the_estimate_offline_by_default_and_say_so(hanging_network, tmp_path: Path,
                                                                                  command: str) -> None:
    """No tokenizer folder, an empty tiktoken cache, a network that hangs: the default still runs, offline."""
    server, env = hanging_network
    result = contextfold(env, *_replay_or_bench(command, tmp_path))
    assert result.returncode == 0, result.stderr
    assert server.accepted == [], f"{command} tried the network"
    said = [line for line in result.stderr.splitlines() if "block-aware estimate" in line]
    assert len(said) == 1 and "--tokenizer estimate" in said[0] and TOKENIZERS_DIR_ENV in said[0]
    assert _counted_with(command, result, tmp_path) == {"replay": "heuristic", "bench": "estimate"}[command]


@pytest.mark.parametrize("command", ["replay", "bench"])
def test_replay_and_bench_count_exactly_from_the_offline_files_by_default(hanging_network, tokenizers_dir: Path,
                                                                            tmp_path: Path, command: str) -> None:
    server, env = hanging_network
    result = contextfold({**env, TOKENIZERS_DIR_ENV: str(tokenizers_dir)}, *_replay_or_bench(command, tmp_path))
    assert result.returncode == 0, result.stderr
    assert "exactly with o200k" in result.stderr and "estimate" not in result.stderr and server.accepted == []
    assert _counted_with(command, result, tmp_path) == {"replay": "tiktoken:o200k_base", "bench": "o200k"}[command]


def test_the_offline_hint_names_both_ways_out() -> None:
    assert TOKENIZERS_DIR_ENV in OFFLINE_HINT and "--tokenizer estimate" in OFFLINE_HINT
