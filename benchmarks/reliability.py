"""The load probe: hostile agent loops at small windows, judged by a server that counts for itself.

    python benchmarks/reliability.py [--steps 200] [--windows 8000 16000] [--providers anthropic openai responses]

Each loop feeds :func:`contextfold.synthetic.hostile_steps` (parallel calls,
1 MB and empty outputs, images, thinking with signatures, errors) to a
:class:`~contextfold.Context` with a transcript and a results folder, as an
agent does: add the step, ``prepare()``, send. The "server" counts the
request as sent with tiktoken ``o200k_base`` (every string but image data,
images by their pixel size under the provider's rule, a few tokens per
message) and refuses it when it is over the window; the loop then calls
``retry_request()`` once, as the README tells agents to. Reported usage goes
back with ``record_usage()``, so the counter anchors as it would in
production. The context itself counts with its default estimator: the probe
checks that the window holds even when the two counts disagree.

Prints one JSON object per loop:
  requests, retried          requests sent, and how many were refused once and retried
  over_after_retry           requests still over the window after their one retry (the bar: 0)
  invalid                    requests whose messages break the provider's pairing rules (the bar: 0)
  largest_share              the largest request as a share of the window
  held_mib_half, held_mib_end
                             Python heap held (tracemalloc) after half the steps and after all of them:
                             flat once outputs are persisted (1 MB outputs go to disk on arrival)
  large_mib_second_half      MiB of outputs over 100 kB the loop added between those two figures
"""

from __future__ import annotations

import argparse
import base64
import json
import math
import struct
import sys
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from contextfold import Context, Usage, Storage
from contextfold.adapters import adapter_for
from contextfold.conversation import Header, Item, Text, ToolSpec
from contextfold.synthetic import hostile_steps

TOKENIZERS = Path(__file__).resolve().parents[1].parent / "shared" / "tokenizers"
PER_MESSAGE_TOKENS = 4


class Server:
    """Counts requests as a provider would, independently of contextfold's estimator."""

    def __init__(self, provider: str, window: int, tokenizers_dir: Path | None) -> None:
        from contextfold.tokens.text import load_encoding

        self.provider, self.window = provider, window
        self.encoding = load_encoding("o200k_base", tokenizers_dir)

    def count(self, request: dict[str, Any]) -> int:
        messages = request.get("messages") or request.get("input") or []
        strings = [*_strings({k: v for k, v in request.items() if k not in ("messages", "input")})]
        images = 0
        for message in messages:
            for text in _strings(message):
                size = _png_size(text)
                if size is None:
                    strings.append(text)
                else:
                    images += self._image_tokens(*size)
        return sum(len(self.encoding.encode(s, disallowed_special=())) for s in strings) + images + PER_MESSAGE_TOKENS * len(messages)

    def _image_tokens(self, width: int, height: int) -> int:
        if self.provider == "anthropic":  # long edge scaled to 1568, then a token per 750 pixels
            scale = min(1.0, 1568 / max(width, height))
            return math.ceil(width * scale * height * scale / 750)
        scale = min(1.0, 2048 / max(width, height))  # fit 2048, shortest side to 768, 170 per 512 tile
        width, height = width * scale, height * scale
        scale = min(1.0, 768 / min(width, height))
        return 85 + 170 * math.ceil(width * scale / 512) * math.ceil(height * scale / 512)

    def refusal(self, tokens: int) -> str:
        return f"prompt is too long: {tokens} tokens > {self.window} maximum"


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _png_size(text: str) -> tuple[int, int] | None:
    """The pixel size of a base64 PNG (bare or as a data URL), ``None`` for any other string."""
    data = text.split("base64,", 1)[1] if text.startswith("data:image/") else text
    if not data.startswith("iVBORw0KGgo"):
        return None
    head = base64.b64decode(data[:32])
    return struct.unpack(">II", head[16:24])


def run_loop(provider: str, window: int, steps: int, folder: Path, tokenizers_dir: Path | None = None,
             seed: int = 11) -> dict[str, Any]:
    """One hostile agent loop; its figures (see the module docstring). The server's tiktoken file comes
    from ``tokenizers_dir`` (else ``$CONTEXTFOLD_TOKENIZERS_DIR``, else tiktoken's cache)."""
    server = Server(provider, window, tokenizers_dir)
    adapter = adapter_for(provider)
    figures = {"provider": provider, "window": window, "requests": 0, "retried": 0, "over_after_retry": 0,
               "invalid": 0, "largest_share": 0.0, "large_mib_second_half": 0.0}
    tracemalloc.start()
    with Context(window_tokens=window, provider=provider,
                 storage=Storage(transcript=folder, session_id=f"probe-{provider}-{window}"),
                 max_output_tokens=min(4_096, window // 4)) as context:
        context.set_header(_header())
        for step, items in enumerate(hostile_steps(steps, seed, images_in_results=provider != "openai")):
            context.add(items)
            if step > steps // 2:
                figures["large_mib_second_half"] += _large_mib(items)
            request = context.prepare()
            tokens = server.count(request)
            if tokens > window:
                figures["retried"] += 1
                request = context.retry_request(server.refusal(tokens)) or request
                tokens = server.count(request)
            figures["requests"] += 1
            figures["over_after_retry"] += tokens > window
            figures["largest_share"] = max(figures["largest_share"], round(tokens / window, 3))
            figures["invalid"] += bool(_read_back(adapter, request).validate())
            context.record_usage(Usage(prompt_tokens=tokens, output_tokens=60))
            if step == steps // 2:
                figures["held_mib_half"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
        figures["held_mib_end"] = round(tracemalloc.get_traced_memory()[0] / 2**20, 1)
        figures["large_mib_second_half"] = round(figures["large_mib_second_half"], 1)
        figures["stages"] = sorted({e.stage for e in context.events})
    tracemalloc.stop()
    return figures


def _large_mib(items: list[Item]) -> float:
    sizes = (len(r.text) for item in items if (r := item.tool_result) is not None and isinstance(r.content, str))
    return sum(size for size in sizes if size > 100_000) / 2**20


def _header() -> Header:
    schema = {"type": "object", "properties": {"command": {"type": "string"}}}
    return Header(system=(Item("system", (Text("You are an operations agent. Use tools; report findings."),)),),
                  tools=tuple(ToolSpec(name, f"Run {name}.", schema) for name in ("bash", "read_file", "grep")))


def _read_back(adapter: Any, request: dict[str, Any]) -> Any:
    return adapter.read(request[adapter.messages_key], system=request.get("system"), tools=request.get("tools"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--windows", type=int, nargs="+", default=[8_000, 16_000])
    parser.add_argument("--providers", nargs="+", default=["anthropic", "openai", "responses"])
    options = parser.parse_args(argv)
    failed = False
    with tempfile.TemporaryDirectory(prefix="contextfold-reliability-") as scratch:
        for window in options.windows:
            for provider in options.providers:
                figures = run_loop(provider, window, options.steps, Path(scratch), TOKENIZERS if TOKENIZERS.is_dir() else None)
                failed |= bool(figures["over_after_retry"] or figures["invalid"])
                print(json.dumps(figures), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
