"""Secrets taken out of text: one family of functions for conversation items and for every diagnostic.

Two uses, one set of rules:

* **Diagnostics** (:func:`redact_credentials`), always on: whatever is
  logged, raised, put in an event, printed by the CLI or stored beside a
  session (a store's URL, a driver's or a provider's error message) passes
  through it first. It masks every credential form it knows: the password of
  a URL's userinfo (``postgresql://user:***@host``); the value of every URL
  query parameter whose name holds a secret word (``?password=``,
  ``&sslpassword=``, ``?key=``, ``access_token``, ``X-Amz-Signature``); the
  value of a ``name=value`` or ``name: value`` pair whose name ends with one
  (a libpq ``host=db password=...`` string, an ``x-api-key:`` header, a JSON
  ``"api_key": "..."``); API-key shapes (:data:`PATTERNS`); and any value it
  is told is secret (``known``: the key a client was made with, a URL's
  password, which a gateway or a driver may echo in any shape).
* **Conversation items** (:func:`redact_item`, ``Policy.redact_secrets``): a
  tool output that prints an environment or a config file puts API keys in
  the conversation, and from there in the transcript, the persisted outputs
  and every request sent. With the policy on,
  :class:`~contextfold.context.Context` passes each new item through it
  before it is recorded, and an event says what kinds were found (never the
  secrets themselves). Only shapes that are unmistakable are matched there
  (the key shapes and URL credentials), so code such as ``sorted(key=len)``
  is left alone. Texts, tool-call arguments and tool outputs are redacted;
  thinking blocks are not (their signature covers their exact text).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import unquote_plus

from .conversation import Block, Item, Text, ToolCall, ToolResult

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic key", re.compile(r"sk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("google key", re.compile(r"\bAIza[0-9A-Za-z_\-]{30,}")),
    ("hugging face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("groq key", re.compile(r"\bgsk_[A-Za-z0-9]{30,}\b")),
    ("xai key", re.compile(r"\bxai-[A-Za-z0-9]{30,}\b")),
    ("aws access key id", re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("aws secret key", re.compile(r"(?<=(?i:aws_secret_access_key))(\s*[=:]\s*[\"']?)[A-Za-z0-9/+=]{40}\b")),
    ("github token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b")),
    ("bearer token", re.compile(r"(?<=(?i:bearer) )[A-Za-z0-9._~+/\-]{16,}=*")),
    ("basic credentials", re.compile(r"(?<=(?i:basic) )[A-Za-z0-9+/]{12,}={0,2}")),
)
"""Each kind of API key or token by its shape (a group 1, when present, is kept: the ``=`` before a value)."""
MASK = "***"
"""What a credential becomes in a diagnostic."""
SECRET_WORDS = ("password", "passwd", "secret", "token", "key", "credential", "credentials", "signature")
"""A name holding one of these at the end of one of its words names a secret (``sslpassword``, ``api_key``,
``X-Amz-Signature``, ``AccountKey``); ``max_tokens`` and ``tokenizer`` do not."""
SECRET_PARTS = frozenset({"pwd", "pass", "sig", "auth", "authorization", "dsn"})
"""Whole words of a name that name a secret too."""
SHORTEST_KNOWN = 6
"""A known secret shorter than this is not searched for: masking every ``1`` or ``true`` in a message would hide
more than it protects."""

_SHAPES = re.compile("|".join(pattern.pattern for _kind, pattern in PATTERNS if not pattern.groups))
"""Every key shape at once, for diagnostics (the one with a group, the AWS secret key, is a secret-named
assignment there)."""
_SHAPE_HINTS = ("sk-", "AIza", "hf_", "gsk_", "xai-", "AKIA", "ASIA", "AIDA", "AROA", "ghp_", "gho_", "ghu_", "ghs_",
                "ghr_", "earer ", "EARER ", "asic ", "ASIC ")
"""What a text holding a key shape holds: a text without any is not searched (most are short and hold none)."""
_NAME_HINTS = ("pass", "pwd", "secret", "token", "key", "credential", "signature", "sig", "auth", "dsn")
"""What a secret's name holds, lower-cased: a text without any has no pair to look at."""
_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s<>\"'`]+")
_ASSIGNMENT = re.compile(
    r"""(?<![\w.\-])(?P<name>[A-Za-z_][\w.\-]*)(?P<quote>["']?)(?P<sep>\s*[=:]\s*)"""
    r"""(?P<value>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|[^\s"',;&}\])]+)"""
)


def is_secret_name(name: str, *, any_word: bool = False) -> bool:
    """Whether ``name`` names a secret: its last word (every word with ``any_word``) ends with a
    :data:`SECRET_WORDS` entry or is a :data:`SECRET_PARTS` one. Words split at ``_ - .`` and lower-to-upper case."""
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()) if w]
    checked = words if any_word else words[-1:]
    return any(word.endswith(SECRET_WORDS) or word in SECRET_PARTS for word in checked)


def redact_url(url: str) -> str:
    """``url`` (or a URL inside it) with its userinfo password and secret query parameters masked
    (:func:`redact_credentials` without the shapes and known values, for naming a store)."""
    return _URL.sub(lambda match: _masked_url(match.group())[0], url) if "://" in url else _assignments(url)


def url_secrets(url: str) -> tuple[str, ...]:
    """The secrets ``url`` holds (its password, its secret parameters' values), as written and decoded: what a
    driver that parsed the URL may echo in another shape, to pass as ``known``."""
    found: list[str] = []
    _masked_url(url, found)
    return tuple(dict.fromkeys(v for secret in found for v in (secret, unquote_plus(secret)) if v))


def redact_credentials(text: str, known: Iterable[str | None] = ()) -> str:
    """``text`` fit for a log line, an event, an exception or the terminal: every credential masked (see the
    module's docstring). ``known``: values to mask wherever and however they appear (the key a client was
    made with, which a gateway may echo in no shape of its own); ``None`` and short ones are skipped."""
    for secret in sorted({s for s in known if s and len(s) >= SHORTEST_KNOWN}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    if any(hint in text for hint in _SHAPE_HINTS):
        text = _SHAPES.sub(MASK, text)
    if "://" in text:
        text = _URL.sub(lambda match: _masked_url(match.group())[0], text)
    if "=" not in text and ":" not in text:
        return text
    lowered = text.lower()
    return _assignments(text) if any(hint in lowered for hint in _NAME_HINTS) else text


def _masked_url(url: str, found: list[str] | None = None) -> tuple[str, int]:
    """``url`` with its credentials masked, and how many; each one masked is added to ``found``."""
    scheme, separator, rest = url.partition("://")
    if not separator:
        return url, 0
    end = min((i for i in (rest.find("?"), rest.find("#")) if i != -1), default=len(rest))
    authority_and_path, tail = rest[:end], rest[end:]
    count = 0
    userinfo, at, after = _userinfo(authority_and_path)
    if at:
        user, colon, password = userinfo.partition(":")
        if colon and password and password != MASK:
            authority_and_path = f"{user}:{MASK}@{after}"
            count += 1
            if found is not None:
                found.append(password)
    if tail.startswith("?"):
        query, hash_, fragment = tail[1:].partition("#")
        pairs = []
        for pair in re.split(r"([&;])", query):
            name, equals, value = pair.partition("=")
            if equals and value and value != MASK and is_secret_name(unquote_plus(name), any_word=True):
                pair = f"{name}={MASK}"
                count += 1
                if found is not None:
                    found.append(value)
            pairs.append(pair)
        tail = f"?{''.join(pairs)}{hash_}{fragment}"
    return f"{scheme}://{authority_and_path}{tail}", count


def _userinfo(rest: str) -> tuple[str, str, str]:
    """``(userinfo, "@", what follows)`` of a URL's text after ``://`` (up to its query), or ``("", "", rest)``.

    A URL parser ends the userinfo at the last ``@`` before the first ``/``; a password holding an unescaped
    ``@`` or ``/`` (``user:p@ss/w@host``) is misread that way and half of it shown. So the userinfo ends at the
    last ``@`` of the whole text whenever there is one after a ``user:`` that is no ``host:port``, or after an
    ``@`` in the authority: a path holding an ``@`` then masks more than the password, never less."""
    authority = rest.split("/", 1)[0]
    _, colon, after_colon = authority.partition(":")
    at = rest.rfind("@")
    if at == -1 or not ("@" in authority or colon and not after_colon.isdigit()):
        return "", "", rest
    return rest[:at], "@", rest[at + 1:]


def _assignments(text: str) -> str:
    """``text`` with the value of every ``name=value`` / ``name: value`` pair whose name names a secret masked."""

    def substitute(match: re.Match[str]) -> str:
        value = match.group("value")
        if not is_secret_name(match.group("name")) or value.strip("'\"") in ("", MASK):
            return match.group()
        masked = f"{value[0]}{MASK}{value[0]}" if value[0] in "'\"" else MASK
        return f"{match.group('name')}{match.group('quote')}{match.group('sep')}{masked}"

    return _ASSIGNMENT.sub(substitute, text)


def _replacement(kind: str) -> Callable[[re.Match[str]], str]:
    """What a match of ``kind`` becomes: its group 1 (when the pattern has one) kept, the secret replaced."""

    def substitute(match: re.Match[str]) -> str:
        return f"{match.group(1) or ''}[REDACTED {kind}]" if match.re.groups else f"[REDACTED {kind}]"

    return substitute


def redact_text(text: str, found: Counter[str]) -> str:
    """Conversation ``text`` with every key shape and URL credential replaced by ``[REDACTED <kind>]``;
    ``found`` counts them by kind."""
    for kind, pattern in PATTERNS:
        text, count = pattern.subn(_replacement(kind), text)
        if count:
            found[kind] += count
    if "://" in text:
        text = _URL.sub(lambda match: _conversation_url(match.group(), found), text)
    return text


def _conversation_url(url: str, found: Counter[str]) -> str:
    masked, count = _masked_url(url)
    if count:
        found["url credential"] += count
    return masked.replace(MASK, "[REDACTED url credential]")


def redact_item(item: Item) -> tuple[Item, Counter[str]]:
    """``item`` with its secrets redacted (the same object when none), and what was found by kind."""
    found: Counter[str] = Counter()
    blocks = tuple(_block(block, found) for block in item.blocks)
    return (replace(item, blocks=blocks) if found else item), found


def _block(block: Block, found: Counter[str]) -> Block:
    if isinstance(block, Text):
        return replace(block, text=redact_text(block.text, found))
    if isinstance(block, ToolCall):
        before = sum(found.values())
        arguments = _value(block.arguments, found)
        return replace(block, arguments=arguments, raw_arguments=None) if sum(found.values()) > before else block
    if isinstance(block, ToolResult):
        content = (redact_text(block.content, found) if isinstance(block.content, str)
                   else tuple(_block(b, found) for b in block.content))
        arguments = _value(block.arguments, Counter()) if block.arguments else block.arguments  # counted at the call
        return replace(block, content=content, arguments=arguments)
    return block


def _value(value: object, found: Counter[str]) -> Any:
    """A JSON value with the secrets in its strings redacted."""
    if isinstance(value, str):
        return redact_text(value, found)
    if isinstance(value, Mapping):
        return {key: _value(inner, found) for key, inner in value.items()}
    if isinstance(value, list):
        return [_value(inner, found) for inner in value]
    return value


def describe(found: Counter[str]) -> str:
    """``"2 anthropic key, 1 bearer token"``: what an event says (kinds and counts, never values)."""
    return ", ".join(f"{count} {kind}" for kind, count in sorted(found.items()))
