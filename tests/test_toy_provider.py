"""A provider with no SDK in one folder and one registry line (``tests/toy_provider``) passes the adapter conformance
suite, runs a Context through prepare/add_response with its usage anchoring the count, and refuses a send by name."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from toy_provider import TOY

from contextfold import Context, UsageMismatch, WireOnlyProvider
from contextfold.adapters import adapter_for, is_prompt_too_long, register
from contextfold.adapters.base import MOVED_TO_CLIENT, Adapter, ProviderClient
from contextfold.agent.models import model_name
from contextfold.adapters.conformance import AdapterConformance
from contextfold.conversation import Conversation
from contextfold.errors import ContextfoldError
from contextfold.summarizers.llm import LLMSummarizer

REPLY = {"id": "t1", "say": "done", "end": "stop", "counted": {"prompt": 40, "output": 2}}


class TestToyConformance(AdapterConformance):
    adapter = TOY
    reply = REPLY
    reply_text, reply_prompt_tokens = "done", 40

    def read_body(self, body: Mapping[str, Any]) -> Conversation:
        return self.adapter.read(body["turns"], system=body.get("rules"), tools=body.get("tools"))


def test_one_registry_line_makes_it_a_provider_like_any() -> None:
    assert adapter_for("toy") is TOY
    assert register(TOY) is TOY  # imported twice: harmless
    assert not is_prompt_too_long("the toy has no overflow wording of its own")


def test_a_second_adapter_cannot_take_a_registered_name() -> None:
    with pytest.raises(ContextfoldError, match="'toy' is already registered"):
        register(type(TOY)())


def test_a_context_renders_its_requests_and_anchors_on_its_usage() -> None:
    context = Context(window_tokens=8_000, provider="toy")
    context.add([{"who": "user", "say": "list the files"}])
    request = context.prepare()
    assert request == {"turns": [{"who": "user", "say": "list the files"}]}
    items = context.add_response({**REPLY, "calls": [{"id": "c1", "tool": "ls", "args": {}}]})
    assert [item.role for item in items] == ["assistant"] and items[0].tool_calls[0].name == "ls"
    assert context.counter.anchored and context.counter.count(context.view()) >= 40


def test_a_made_up_usage_figure_for_a_long_first_request_warns_instead_of_anchoring_silently() -> None:
    """The issue's case: a toy provider reporting 234 prompt tokens for 72,000 characters."""
    context = Context(window_tokens=200_000, provider="toy")
    context.add([{"who": "user", "say": "the quick brown fox jumps over a lazy dog " * 1_715}])
    context.prepare()
    with pytest.warns(UsageMismatch, match="reported 234 prompt tokens"):
        context.add_response({**REPLY, "counted": {"prompt": 234, "output": 2}})


def test_a_model_summary_the_agent_or_a_provider_compaction_is_refused_naming_the_provider() -> None:
    assert TOY.client is None
    with pytest.raises(WireOnlyProvider, match="'toy' .* which a model summarizer needs") as refused:
        LLMSummarizer(provider="toy")
    assert (refused.value.provider, refused.value.needed) == ("toy", "a model summarizer")
    with pytest.raises(WireOnlyProvider, match="'toy' .* which the reference agent needs"):
        model_name("toy", None)
    context = Context(window_tokens=8_000, provider="toy")
    context.add([{"who": "user", "say": "list the files"}])
    with pytest.raises(WireOnlyProvider, match="'toy' .* which provider compaction needs"):
        context.start_compaction().call(None, model="toy-1", max_tokens=100)


def test_the_toy_defines_the_wire_alone_and_the_old_sdk_spellings_still_answer() -> None:
    """No SDK member is stubbed in the toy; ``adapter.make_client`` and its kin, moved to ``adapter.client``, are
    forwarded there with a DeprecationWarning (the toy's refusal as before)."""
    assert not MOVED_TO_CLIENT & set(vars(type(TOY))), "the toy stubs an SDK member"
    anthropic = adapter_for("anthropic")
    with pytest.warns(DeprecationWarning, match="adapter.client.summary_model"):
        assert anthropic.summary_model == anthropic.client.summary_model  # type: ignore[attr-defined, union-attr]
    with pytest.warns(DeprecationWarning), pytest.raises(WireOnlyProvider, match="which make_client needs"):
        TOY.make_client  # type: ignore[attr-defined]  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'no_such_member'"):
        TOY.no_such_member  # type: ignore[attr-defined]  # noqa: B018


def test_the_signature_docs_architecture_gives_is_every_method_an_adapter_must_define() -> None:
    """The doc's toy block lists exactly the abstract methods of ``Adapter``, and the toy defines each."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"one registry line\n.*?```python\n(.*?)```", docs, re.S)
    assert block, "docs/architecture.md has no toy provider block"
    documented = {node.name for node in ast.walk(ast.parse(block.group(1))) if isinstance(node, ast.FunctionDef)}
    assert documented == set(Adapter.__abstractmethods__)
    assert documented <= set(vars(type(TOY))), "the toy leaves a documented method undefined"
    assert "TOY = register(Toy())" in block.group(1) and "TOY = register(Toy())" in (
        Path(__file__).parent / "toy_provider" / "__init__.py").read_text(encoding="utf-8")


def test_the_client_signature_docs_architecture_gives_is_every_method_a_provider_client_must_define() -> None:
    """The doc's client block (a provider with an SDK) lists exactly the abstract methods of ``ProviderClient``."""
    docs = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(class ToyClient\(ProviderClient\):.*?)```", docs, re.S)
    assert block, "docs/architecture.md has no ToyClient block"
    client = next(node for node in ast.parse(block.group(1)).body
                  if isinstance(node, ast.ClassDef) and node.name == "ToyClient")
    documented = {node.name for node in client.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    assert documented == set(ProviderClient.__abstractmethods__)
