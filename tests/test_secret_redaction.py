"""No credential in a log line, an event, an exception, a transcript or the terminal, whatever form it comes in:
a URL's userinfo, a ``password=`` / ``sslpassword=`` / ``*token*`` / ``*secret*`` / ``*key*`` query parameter, a
libpq ``key=value`` string, or an API key a provider's gateway echoes in its error body."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from contextfold import Context, Storage
from contextfold.cli import cli
from contextfold.codec import conversation_to_dict
from contextfold.errors import StoreError
from contextfold.pipeline.base import Policy
from contextfold import redaction
from contextfold.stores import open_store
from contextfold.summarizers import ModelSummarizer
from contextfold.synthetic import generate_session
from contextfold.testing.fake_llm import FakeLLMServer, Fault

SECRET = "s3cret-Pa55w0rd"

URL_FORMS = {
    "userinfo": f"postgresql://cf:{SECRET}@db.internal:5432/app",
    "userinfo, no user": f"redis://:{SECRET}@cache.internal:6379/0",
    "userinfo holding @ and /": f"postgresql://cf:{SECRET}@x/y@db.internal/app",
    "userinfo percent-encoded": f"postgresql://cf:{SECRET}%40x@db.internal/app",
    "password parameter": f"postgresql://cf@db.internal/app?sslmode=require&password={SECRET}",
    "sslpassword parameter": f"postgresql://cf@db.internal/app?sslpassword={SECRET}&sslmode=verify-full",
    "parameter named in capitals": f"postgresql://cf@db.internal/app?PassWord={SECRET}",
    "token parameter": f"https://gateway.internal/v1?auth_token={SECRET}",
    "secret parameter": f"https://idp.internal/token?client_id=app&client_secret={SECRET}",
    "key parameter": f"https://generativelanguage.googleapis.com/v1beta/models?key={SECRET}",
    "api key parameter": f"https://gateway.internal/v1?x-api-key={SECRET}#frag",
    "signature parameter": f"https://bucket.s3.amazonaws.com/o?X-Amz-Signature={SECRET}&X-Amz-Expires=60",
    "libpq key=value": f"host=db.internal port=5432 user=cf password={SECRET} dbname=app",
    "libpq quoted value": f"host=db.internal sslpassword='{SECRET} with spaces' dbname=app",
}
KEY_SHAPES = {
    "anthropic key": "sk-ant-api03-" + "Q7w9E1r3T5y7U9i1O3p5" * 2,
    "openai key": "sk-proj-" + "A1s2D3f4G5h6J7k8L9z0" * 2,
    "google key": "AIza" + "SyD-x1C2v3B4n5M6q7W8e9R0t1Y2u3I4o",  # 35 characters after AIza
    "bearer token": "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    "x-api-key header": "x-api-key: gw-live-7Hq2ZkP9xLm4Rt",
    "api_key in JSON": '"api_key": "gw-live-7Hq2ZkP9xLm4Rt"',
    "github token": "ghp_" + "b" * 36,
}


def secret_of(form: str, text: str) -> str:
    return {"x-api-key header": "gw-live-7Hq2ZkP9xLm4Rt", "api_key in JSON": "gw-live-7Hq2ZkP9xLm4Rt",
            "bearer token": text.split()[-1]}.get(form, text)


@pytest.mark.parametrize("form", URL_FORMS)
def test_every_url_form_is_masked(form: str) -> None:
    url = URL_FORMS[form]
    for redacted in (redaction.redact_url(url), redaction.redact_credentials(url), redaction.redact_credentials(f"could not connect to {url}: refused")):
        assert SECRET not in redacted and "***" in redacted, redacted
        assert "db.internal" in redacted or "internal" in redacted or "googleapis" in redacted or "amazonaws" in redacted


@pytest.mark.parametrize("form", KEY_SHAPES)
def test_every_key_shape_is_masked_in_an_error_text(form: str) -> None:
    text = f"HTTP 401: invalid credentials ({KEY_SHAPES[form]}) for model claude-x"
    redacted = redaction.redact_credentials(text)
    assert secret_of(form, KEY_SHAPES[form]) not in redacted and "***" in redacted and "claude-x" in redacted


def test_what_is_not_a_secret_stays() -> None:
    for text in ("max_tokens: 4096 > 2048", "KeyError: 'choices'", "tokenizer: o200k_base", "sqlite:///sessions.db",
                 "https://api.anthropic.com/v1/messages", "postgresql://cf@db.internal:5432/app?sslmode=require",
                 "prompt is too long: 210000 tokens > 200000 maximum"):
        assert redaction.redact_credentials(text) == text


UNREACHABLE = {
    "userinfo": f"postgresql://cf:{SECRET}@127.0.0.1:1/postgres",
    "password parameter": f"postgresql://cf@127.0.0.1:1/postgres?password={SECRET}",
    "sslpassword parameter": f"postgresql://cf@127.0.0.1:1/postgres?sslpassword={SECRET}",
    "token parameter the driver refuses": f"postgresql://cf@127.0.0.1:1/postgres?auth_token={SECRET}",
    "redis userinfo": f"redis://cf:{SECRET}@127.0.0.1:1/0",
    "redis password parameter": f"redis://127.0.0.1:1/0?password={SECRET}",
    "libpq key=value": f"host=127.0.0.1 port=1 user=cf password={SECRET} dbname=postgres",
}


@pytest.mark.parametrize("form", UNREACHABLE)
def test_a_store_url_in_any_form_never_shows_its_secret(form: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """Through the real drivers (psycopg, redis-py), refused at once: the exception, the log and the CLI's line."""
    monkeypatch.chdir(tmp_path)
    caplog.set_level(logging.DEBUG)
    url = UNREACHABLE[form]
    with pytest.raises(StoreError) as refused:
        open_store(url)
    assert SECRET not in str(refused.value) and "***" in str(refused.value)
    for arguments, env in ((["sessions", "list", "--store", url], {}), (["sessions", "list"], {"CONTEXTFOLD_STORE": url})):
        result = CliRunner().invoke(cli, arguments, env=env)
        assert result.exit_code == 2 and "contextfold:" in result.output
        assert SECRET not in result.output, result.output
    assert SECRET not in caplog.text
    assert list(tmp_path.iterdir()) == []  # a connection string is not a folder to create


@pytest.mark.parametrize("form", ["userinfo", "password parameter", "sslpassword parameter"])
def test_a_working_store_shows_no_secret_in_its_name_events_or_log(form: str, postgres_server_url: str,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    base = postgres_server_url  # postgresql://cf@127.0.0.1:PORT/postgres, trust auth: any password goes in
    url = {"userinfo": base.replace("cf@", f"cf:{SECRET}@"), "password parameter": f"{base}?password={SECRET}",
           "sslpassword parameter": f"{base}?sslpassword={SECRET}"}[form]
    caplog.set_level(logging.DEBUG)
    context = Context(window_tokens=20_000, storage=Storage(store=url, session_id=f"s-{form.split()[0]}"))
    context.add([{"role": "user", "content": "hello"}])
    assert context.transcript is not None
    store = context.transcript.store
    shown = [repr(store), store.url, *(json.dumps(e.to_dict()) for e in context.events)]
    with pytest.raises(StoreError) as refused:
        store.append("nobody", [{"type": "x", "v": float("nan")}])
    shown.append(str(refused.value))
    context.close()
    assert "***" in store.url and caplog.records
    assert not [text for text in shown if SECRET in text] and SECRET not in caplog.text


GATEWAY_KEY = "gw-live-7Hq2ZkP9xLm4Rt-unshaped"
"""A gateway's own key: no shape says it is one; only knowing it is secret finds it."""
SHAPED_KEY = KEY_SHAPES["anthropic key"]


def echoing_gateway(server: FakeLLMServer, key: str, times: int = 4) -> None:
    """Every request answered 400 with a body that quotes the key, as some gateways do."""
    server.script("messages", *[Fault.invalid(f"invalid x-api-key {key}: no such key (got '{key}')")] * times)


def summarizer(server: FakeLLMServer, key: str | None) -> ModelSummarizer:
    return ModelSummarizer(provider="anthropic", base_url=server.url, api_key=key, timeout_s=5.0, max_retries=0)


@pytest.mark.parametrize("key, redact_secrets", [(GATEWAY_KEY, False), (SHAPED_KEY, False), (SHAPED_KEY, True)])
def test_an_echoing_gateway_leaks_no_key(key: str, redact_secrets: bool, fake_llm: FakeLLMServer, tmp_path: Path,
                                         caplog: pytest.LogCaptureFixture) -> None:
    """The key passed as ``api_key=``: not in the events, the transcript or the WARNING log of the fallback."""
    echoing_gateway(fake_llm, key)
    caplog.set_level(logging.DEBUG)
    context = Context(window_tokens=20_000,
                      storage=Storage(transcript=tmp_path / "t", session_id="s1"),
                      summarizer=summarizer(fake_llm, key),
                      policy=Policy(redact_secrets=redact_secrets, min_summary_messages=2,
                                    tail_max_trigger_fraction=0.1))  # lean's tail: most of the session is summarized
    context.add([{"role": "user", "content": "Fix the bug in f1.py"}])
    for k in range(8):
        context.add([{"role": "assistant", "content": f"step {k}"}, {"role": "user", "content": f"go on {k}: " + "word " * 600}])
    events = context.compact()
    context.close()
    assert fake_llm.requests, "the gateway was never asked, so the test proves nothing"
    assert [e for e in events if e.action == "fallback" and "x-api-key ***" in e.detail], "the gateway's error was not met"
    assert any("WARNING" == r.levelname and "x-api-key" in r.getMessage() for r in caplog.records)
    written = b"".join(p.read_bytes() for p in (tmp_path / "t").rglob("*") if p.is_file()).decode()
    assert "x-api-key" in written  # the error is recorded, without the key
    assert key not in written and key not in caplog.text
    assert not [e for e in context.events if key in json.dumps(e.to_dict())]


def test_the_cli_shows_no_key_a_gateway_echoes(fake_llm: FakeLLMServer, tmp_path: Path) -> None:
    """The key from the environment (``ANTHROPIC_API_KEY``): ``compact``'s warning and ``chat -p``'s error line."""
    echoing_gateway(fake_llm, GATEWAY_KEY, times=8)
    recording = tmp_path / "session.json"
    recording.write_text(json.dumps(conversation_to_dict(generate_session(rounds=12))), encoding="utf-8")
    env = {"ANTHROPIC_API_KEY": GATEWAY_KEY}
    runner = CliRunner()
    compacted = runner.invoke(cli, ["compact", str(recording), "--window", "20000", "--summarizer", "anthropic",
                                    "--base-url", fake_llm.url, "-o", str(tmp_path / "out.json")], env=env)
    assert compacted.exit_code == 0 and "warning:" in compacted.output and "x-api-key" in compacted.output
    assert GATEWAY_KEY not in compacted.output
    assert GATEWAY_KEY not in (tmp_path / "out.json").read_text()
    (tmp_path / "work").mkdir()
    chatted = runner.invoke(cli, ["chat", "--provider", "anthropic", "--model", "claude-sonnet-4-6", "--base-url",
                                  fake_llm.url, "--yes", "--cwd", str(tmp_path / "work"), "-p", "hello"], env=env)
    assert chatted.exit_code == 1 and "x-api-key" in chatted.output, chatted.output
    assert GATEWAY_KEY not in chatted.output


def test_the_cli_log_line_masks_what_a_record_holds(capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal's last guard: a record some library wrote with a credential in it is shown masked."""
    from contextfold.cli.logs import _EchoHandler

    for url in (*URL_FORMS.values(), KEY_SHAPES["anthropic key"]):
        _EchoHandler().emit(logging.makeLogRecord({"msg": "connecting to %s", "args": (url,), "levelname": "INFO"}))
    shown = capsys.readouterr().err
    assert shown.count("contextfold: info: connecting to") == len(URL_FORMS) + 1
    assert SECRET not in shown and KEY_SHAPES["anthropic key"] not in shown


def test_with_the_policy_a_url_credential_in_the_conversation_is_redacted(tmp_path: Path) -> None:
    output = (f"DATABASE_URL={URL_FORMS['userinfo']}\nREPLICA={URL_FORMS['password parameter']}\n"
              "then: sorted(rows, key=len) and https://example.com/docs?page=2\n")
    context = Context(window_tokens=20_000,
                      storage=Storage(transcript=tmp_path, session_id="s1"), policy=Policy(redact_secrets=True))
    context.add([{"role": "user", "content": "show the settings"}, {"role": "assistant", "content": output}])
    context.close()
    written = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()).decode()
    assert SECRET not in written and written.count("[REDACTED url credential]") == 2
    assert "sorted(rows, key=len)" in written and "https://example.com/docs?page=2" in written  # code and plain URLs stay
    (event,) = [e for e in context.events if e.stage == "redact"]
    assert dict(event.data) == {"url credential": 2}
