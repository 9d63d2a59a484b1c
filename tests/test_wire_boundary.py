"""Provider wire formats are read and written only in ``contextfold.adapters``.

The test greps the package for the keys that only a provider's wire format
has. Keys the neutral model shares with a format are not searched for
(``tool_result`` and ``redacted_thinking`` are also block kinds,
``prompt_tokens``/``output_tokens`` are :class:`~contextfold.usage.Usage`
fields); ``tool_use_id`` and the usage keys stand in for them.
"""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "contextfold"
WIRE_KEYS = (
    "tool_use", "tool_use_id", "tool_calls", "tool_call_id", "function_call", "function_call_output",
    "custom_tool_call", "custom_tool_call_output", "cache_control", "choices", "finish_reason", "stop_reason",
    "input_tokens", "completion_tokens", "cache_read_input_tokens", "cache_creation_input_tokens",
    "prompt_tokens_details", "input_tokens_details", "reasoning_content", "input_schema", "image_url",
    "input_text", "output_text", "input_image", "input_file", "context_management", "applied_edits",
    "cleared_input_tokens", "encrypted_content",
)  # fmt: skip
PATTERN = re.compile(
    r"""["'](?P<key>""" + "|".join(WIRE_KEYS) + r""")["']|\.(?P<attribute>choices|finish_reason|stop_reason)\b"""
)
ALLOWED = {
    "importers/openhands.py": (
        "OpenHands events name their own fields tool_call_id and reasoning_content; "
        "the recording format's keys, not a provider message"
    ),
    "importers/openhands_legacy.py": (
        "OpenHands v0.x keeps its own tool_call_metadata.tool_call_id on actions and observations; the recording "
        "format's key (the model's response kept beside it is read by the OpenAI adapter)"
    ),
    "importers/codex_exec.py": "Codex's own turn.completed event reports input_tokens/cached_input_tokens",
    "importers/_common.py": (
        "tool definitions as agents record them (bare names, OpenAI function objects or flat dicts with "
        "input_schema) are read leniently, whatever their shape, into ToolSpecs"
    ),
    "integrations/openai_agents.py": (
        "the Agents SDK sums usage into its own dataclass; it is restated as the Responses usage it was summed "
        "from and read by the Responses adapter (to go once adapters read such objects themselves)"
    ),
}


def wire_key_uses() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.startswith(("adapters/", "testing/")):  # testing/: the scripted servers are the provider's side
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = PATTERN.search(line)
            if match:
                found.setdefault(relative, []).append(f"{number}: {match.group('key') or match.group('attribute')}")
    return found


def test_no_module_outside_the_adapters_reads_or_writes_provider_wire_keys() -> None:
    offenders = {path: uses for path, uses in wire_key_uses().items() if path not in ALLOWED}
    assert offenders == {}


def test_every_exception_is_still_needed() -> None:
    assert sorted(ALLOWED) == sorted(path for path in wire_key_uses() if path in ALLOWED)


def test_the_grep_finds_a_wire_key() -> None:
    assert PATTERN.search('block.get("tool_use_id")') and PATTERN.search("completion.choices[0]")
    assert PATTERN.search('data.get("context_management")') and PATTERN.search('item.get("encrypted_content")')
    assert not PATTERN.search('block.kind == "tool_result"')


PREAMBLE_USERS = {
    "summarizers/base.py": "where the preamble is written down",
    "pipeline/stages/summarize.py": "the summary stage puts it in front of the summary, and says how long it is",
    "context/native.py": (
        "a provider's compaction with no readable text (OpenAI's, encrypted) gets an extractive summary for other "
        "readers, framed as the summary stage frames one"
    ),
    "integrations/_fold.py": (
        "a framework that stored only a summary's text lost the model's marker: the text is all there is to "
        "recognise it by, once, when it is read back"
    ),
}


def test_a_summary_is_known_by_the_model_not_by_its_text() -> None:
    """Whether a block is a summary, and where its body starts, are in the model (``Summary``, ``preamble``):
    no module compares text with the preamble, save where a framework kept only the text."""
    users = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if "SUMMARY_PREAMBLE" in path.read_text(encoding="utf-8")
    }
    assert users == set(PREAMBLE_USERS)
