"""Text counters: a string in, its tokens out.

:class:`HeuristicText` needs nothing and is tuned against o200k;
:class:`TiktokenText` is exact for OpenAI's ``o200k_base`` / ``cl100k_base``
and loads its BPE file offline from a folder or tiktoken's cache; when it must
download it, it does so within a time limit (tiktoken's own download has
none), which is what the file plumbing here is for.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..errors import TokenizerUnavailable, install_hint

if TYPE_CHECKING:
    from tiktoken import Encoding


class TextCounter(Protocol):
    """Anything that turns text into a token count; ``name`` keys the count kept in each item's readings."""

    name: str

    def __call__(self, text: str) -> int: ...


# BPE tokenizers first split text into pieces (words with their leading space,
# digit groups, punctuation runs, whitespace runs) and then merge bytes inside
# each piece. The heuristic mirrors that split with one regular expression and
# charges each kind of piece what it costs on average. That is the "characters
# per token per content type" idea done at the piece level: prose is mostly
# short words (about 1 token each, ~4.4 chars/token), code and JSON add
# punctuation runs and indentation (~2.8-4.3 chars/token), CJK and base64 are
# charged per character. The base64 branch first checks that 33 such
# characters follow (as its last part requires anyway): a word fails there
# at its end, before the three scans for a digit, an upper and a lower case
# letter (the pattern is most of the time the heuristic takes).
_PIECES = re.compile(
    r"""
     (?P<ctrl>[\x00-\x08\x0e-\x1b\x7f])
    |(?P<cjk>[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff01-\uff60]+)
    |(?P<b64>(?=[A-Za-z0-9+/=]{33})(?=[A-Za-z0-9+/=]*\d)(?=[A-Za-z0-9+/=]*[A-Z])(?=[A-Za-z0-9+/=]*[a-z])[A-Za-z0-9+/=]{33,})
    |(?P<word>[A-Z]*[a-z]+|[A-Z]+)
    |(?P<uword>[^\W\d_]+)
    |(?P<gutter>(?<!\S)\d+→)
    |(?P<num>\d+)
    |(?P<nl>\s*\n\s*)
    |(?P<sp>[ \t]{2,})
    |(?P<punct>[^\w\s\x00-\x08\x0e-\x1b\x7f]+|_+)
    """,
    re.VERBOSE,
)

# Costs in o200k tokens, fitted once offline (non-negative least squares,
# weighted for relative error) against tiktoken o200k_base on 4,351 chunks of
# up to 4,000 characters: mini-swe-agent and live-swe-agent messages, tool
# outputs and tool-call arguments, tau-bench JSON tool results, Python stdlib
# source, Russian prose (aider history, vim tutor), Chinese/Japanese/Korean
# prose (vim tutors) and random base64. Per-chunk median error 3-5 % on
# prose, code and JSON, 8 % on CJK and Cyrillic, under 1 % on base64
# (characters/4 is 11-63 % off on the same chunks).
_CJK_TOKENS_PER_CHAR = 0.819  # ~1.2 chars/token in o200k (Claude's tokenizer is nearer 1:1; calibration absorbs it)
_BASE64_TOKENS_PER_CHAR = 0.678  # ~1.5 chars/token: random data barely merges
_WORD_TOKENS = 0.959  # a Latin word of up to _SHORT_WORD_CHARS letters is about one token...
_LONG_WORD_TOKENS_PER_EXTRA_CHAR = 0.289  # ...and a longer one costs ~3.5 more chars/token beyond that
_SHORT_WORD_CHARS = 8
_OTHER_LETTER_TOKENS_PER_CHAR = 0.308  # Cyrillic, Greek, accented runs: ~3.2 chars/token
_DIGIT_GROUP_TOKENS = 1.764  # per group of up to 3 digits (o200k never merges more)
_NEWLINE_RUN_TOKENS = 1.006
_SPACE_RUN_TOKENS = 0.973  # indentation: a run of spaces is about one token
_PUNCT_RUN_TOKENS = 0.756
_PUNCT_TOKENS_PER_EXTRA_CHAR = 0.103


_GUTTER_TOKENS = 3.0  # a line number's gutter (Claude Code's Read: "     12→"), on top of its digit groups:
# o200k splits it "\n", "    ", " ", "12", "→" (a number takes no leading space, so the last one stands alone),
# where the newline run, the number and the arrow were charged 3.5; the fitted costs above never saw the shape, and
# file reads with it, a third of the corpus's tool outputs, were counted 10 % short (median; 17 % at p10)
_CONTROL_TOKENS = 1.0  # a control character is a token of its own: the escape of a terminal colour code
# ("\x1b[32m.\x1b[0m", nine tokens: a test runner's coloured dots) was charged as one punctuation run with the
# "[" after it, which counted such outputs 17 % short
_SHORT_PIECE_CHARS = 64
"""Pieces shorter than this take their cost from a table built once (the very floats the formulas give)."""
_WORD_COSTS = [_WORD_TOKENS + _LONG_WORD_TOKENS_PER_EXTRA_CHAR * max(0, n - _SHORT_WORD_CHARS)
               for n in range(_SHORT_PIECE_CHARS)]
_PUNCT_COSTS = [_PUNCT_RUN_TOKENS + _PUNCT_TOKENS_PER_EXTRA_CHAR * (n - 1) for n in range(_SHORT_PIECE_CHARS)]


def piece_costs(text: str) -> list[float]:
    """What each piece of ``text`` costs, in order (:func:`heuristic_tokens` adds them up).

    The pieces come as tuples of the pattern's groups (one of them set), which
    spares a match object per piece: most of the time is the pattern itself.
    """
    costs: list[float] = []
    add = costs.append
    for ctrl, cjk, b64, word, uword, gutter, num, nl, sp, punct in _PIECES.findall(text):
        if word:
            n = len(word)
            add(_WORD_COSTS[n] if n < _SHORT_PIECE_CHARS
                else _WORD_TOKENS + _LONG_WORD_TOKENS_PER_EXTRA_CHAR * max(0, n - _SHORT_WORD_CHARS))
        elif sp:
            add(_SPACE_RUN_TOKENS)
        elif punct:
            n = len(punct)
            add(_PUNCT_COSTS[n] if n < _SHORT_PIECE_CHARS else _PUNCT_RUN_TOKENS + _PUNCT_TOKENS_PER_EXTRA_CHAR * (n - 1))
        elif nl:
            add(_NEWLINE_RUN_TOKENS)
        elif num:
            add(_DIGIT_GROUP_TOKENS * ((len(num) + 2) // 3))
        elif gutter:
            add(_GUTTER_TOKENS + (len(gutter) + 1) // 3)  # the digits before the arrow, a token per group of 3
        elif ctrl:
            add(_CONTROL_TOKENS)
        elif uword:
            add(_OTHER_LETTER_TOKENS_PER_CHAR * len(uword))
        elif cjk:
            add(_CJK_TOKENS_PER_CHAR * len(cjk))
        else:
            add(_BASE64_TOKENS_PER_CHAR * len(b64))
    return costs


def heuristic_tokens(text: str) -> int:
    """Estimated o200k tokens of ``text``, without any tokenizer (about 8 MB/s).

    The costs are added one at a time in the order of the pieces: floating-point
    addition is not associative, and a count must not depend on the way it was
    reached (:class:`HeuristicText` adds the same costs in the same order).
    """
    total = 0.0
    for cost in piece_costs(text):
        total += cost
    return round(total)


# No piece holds whitespace or looks across it, except that a run of
# whitespace holding a newline is always one piece of its own (the ``nl``
# group: at the run's first character the pattern tries it before anything
# that could take a part of the run) and a run of two or more spaces or tabs
# is one too. So the pieces of a text are those of its lines (the text
# between newline runs) in order, one ``nl`` piece between each two; and the
# pieces of a line are those of its words and of the whitespace between them
# (``sp`` pieces or none), each read alone.
_WHITESPACE_RUN = re.compile(r"(\s+)")
_ENTRY_CHARS = 64
"""What a remembered string is counted beyond its characters: its entry, string and tuple headers."""


def _lines(text: str) -> list[str]:
    """``text`` between its newline runs, as ``re.split(r"\\s*\\n\\s*", text)`` gives it, without running a
    pattern at every character (``str.strip`` takes away what ``\\s`` matches: the same 29 characters)."""
    if "\n" not in text:
        return [text]
    rows = text.split("\n")
    middle = [row.strip() for row in rows[1:-1]]
    return [rows[0].rstrip(), *[row for row in middle if row], rows[-1].lstrip()]


class HeuristicText:
    """The dependency-free text counter (:func:`heuristic_tokens`), remembering the piece costs of lines and words.

    The texts a compaction counts are mostly new strings made of old lines (a
    summary quotes the history's errors, commands and paths, a cleared output
    keeps its head and tail, a survival note its excerpts), and its new lines
    are mostly old words (a line cut short, a path in a bullet); reading the
    pieces was most of a summarizing step's time. This counter reads each
    distinct line once, from the remembered costs of its words (each distinct
    word read once), and adds the costs in the order of the pieces, so every
    count equals :func:`heuristic_tokens`'. Bounded like
    :class:`RememberedText`: the lines of a text longer than ``max_text_chars``
    are not held (an oversized output goes to disk, and must not stay in
    memory through this cache), nor a string longer than ``max_line_chars``;
    it holds two generations of at most half ``max_chars`` each, each string
    held counting its length plus :data:`_ENTRY_CHARS` (most are short words,
    whose entries cost more than their characters: about 3 bytes per counted
    character were measured). When the newer is full it becomes the older and
    the oldest is forgotten; a string found in the older moves to the newer.
    What a step reuses is mostly recent, so forgetting the oldest half costs
    little, where forgetting everything at once made the next step re-read all
    it needed (its p90 time rose by half); and the cache stays small beside
    the history (about 3 MB full), which a loop of hostile outputs of random
    lines would otherwise fill with lines never seen again.
    """

    name = "heuristic"

    def __init__(self, max_chars: int = 1_000_000, max_line_chars: int = 4_096, max_text_chars: int = 32_768) -> None:
        self.max_chars = max_chars
        self.max_line_chars = max_line_chars
        self.max_text_chars = max_text_chars
        self._known: dict[str, tuple[float, ...]] = {}  # a line's or a word's piece costs: the same function of it
        self._older: dict[str, tuple[float, ...]] = {}
        self._chars = 0

    def __call__(self, text: str) -> int:
        if len(text) > self.max_text_chars:
            return heuristic_tokens(text)
        known = self._known
        total = 0.0
        for number, line in enumerate(_lines(text)):
            if number:
                total += _NEWLINE_RUN_TOKENS
            costs = known.get(line) or self._promoted(line)
            for cost in self._line(line) if costs is None else costs:
                total += cost
        return round(total)

    def _line(self, line: str) -> tuple[float, ...]:
        """``line``'s piece costs, from its words' and its spaces'."""
        known = self._known
        costs: list[float] = []
        # Whitespace makes a piece only where two spaces or tabs meet; where none do, only the words count.
        for part in line.split() if "\t" not in line and "  " not in line else _WHITESPACE_RUN.split(line):
            part_costs = known.get(part) or self._promoted(part)
            if part_costs is None:
                part_costs = self._remember(part, tuple(piece_costs(part)))
            costs += part_costs
        return self._remember(line, tuple(costs))

    def _promoted(self, key: str) -> tuple[float, ...] | None:
        """``key``'s costs from the older generation, moved to the newer; ``None`` when it holds none."""
        costs = self._older.get(key)
        return None if costs is None else self._remember(key, costs)

    def _remember(self, key: str, costs: tuple[float, ...]) -> tuple[float, ...]:
        if len(key) <= self.max_line_chars:
            size = len(key) + _ENTRY_CHARS
            if self._chars + size > self.max_chars // 2:
                self._older, self._known = self._known, {}
                self._chars = 0
            self._known[key] = costs
            self._chars += size
        return costs


class RememberedText:
    """A text counter that counts each distinct text once, then looks it up.

    The stages rebuild items around the same strings (an output kept in a new
    view, a summary the summarizer measured and the view then counts as an
    item, a candidate view priced twice), and Python keeps a string's hash,
    so a repeat costs one lookup instead of a pass over the text. Bounded:
    past ``max_chars`` of remembered text it forgets everything and starts
    again (counts are a pure function of the text, so nothing changes but
    time); a text longer than ``max_text_chars`` is never held (an oversized
    output goes to disk, and must not stay in memory through this cache).
    """

    def __init__(self, counter: TextCounter, max_chars: int = 16_000_000, max_text_chars: int = 32_768) -> None:
        self.counter = counter
        self.name = counter.name
        self.max_chars = max_chars
        self.max_text_chars = max_text_chars
        self._known: dict[str, int] = {}
        self._chars = 0

    def __call__(self, text: str) -> int:
        if len(text) > self.max_text_chars:  # a large output is counted once, then saved to disk: never held here
            return self.counter(text)
        tokens = self._known.get(text)
        if tokens is None:
            tokens = self.counter(text)
            if self._chars + len(text) > self.max_chars:
                self._known.clear()
                self._chars = 0
            self._known[text] = tokens
            self._chars += len(text)
        return tokens


class CharRatioText:
    """``len(text) / chars_per_token``: the crude rule, kept as a baseline to compare against."""

    def __init__(self, chars_per_token: float = 4.0) -> None:
        self.chars_per_token = chars_per_token
        self.name = f"chars/{chars_per_token:g}"

    def __call__(self, text: str) -> int:
        return round(len(text) / self.chars_per_token)


# tiktoken downloads its BPE files from these URLs and caches them under the
# sha1 of the URL; the sha256 values are the ones tiktoken itself checks.
_ENCODING_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_ENCODING_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
TOKENIZERS_DIR_ENV = "CONTEXTFOLD_TOKENIZERS_DIR"
"""Environment variable naming a folder holding ``o200k_base.tiktoken`` / ``cl100k_base.tiktoken``."""
DOWNLOAD_TIMEOUT_S = 20.0
"""The longest a BPE file's download may take (tiktoken's own download has no time limit at all)."""
OFFLINE_HINT = (f"for exact counts offline, set {TOKENIZERS_DIR_ENV} to a folder holding o200k_base.tiktoken, "
                "or run once with --tokenizer o200k while online (the file then stays in tiktoken's cache); "
                "--tokenizer estimate counts without it, a few percent off")
"""How to get exact counts without the network, or do without them: said whenever the file cannot be had."""

_load_lock = threading.Lock()
_encodings: dict[tuple[str, str | None], Encoding] = {}


def tiktoken_cache_dir(tokenizers_dir: str | os.PathLike[str]) -> Path:
    """A fresh directory usable as ``TIKTOKEN_CACHE_DIR`` for the files in ``tokenizers_dir``.

    tiktoken looks for ``<cache>/<sha1 of the download URL>``; this links each
    ``<name>.tiktoken`` found in ``tokenizers_dir`` under that name, so tiktoken
    loads it with no network.
    """
    source = Path(tokenizers_dir)
    return _linked_cache({name: source / f"{name}.tiktoken" for name in _ENCODING_SHA256})


def _linked_cache(files: dict[str, Path]) -> Path:
    """A fresh tiktoken cache folder holding a link to each existing file, under its encoding's cache key."""
    cache = Path(tempfile.mkdtemp(prefix="contextfold-tiktoken-"))
    for name, path in files.items():
        if path.exists():
            (cache / _cache_key(name)).symlink_to(path.resolve())
    return cache


def _cache_key(name: str) -> str:
    return hashlib.sha1(_ENCODING_URL.format(name=name).encode()).hexdigest()


def _tiktoken_cache() -> Path | None:
    """The folder tiktoken caches downloads in (as its ``read_file_cached`` picks it); None when caching is off."""
    for variable in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if variable in os.environ:
            return Path(os.environ[variable]) if os.environ[variable] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def cached_file(name: str) -> Path | None:
    """``name``'s BPE file in tiktoken's cache when it is there and intact (tiktoken would re-download it otherwise)."""
    cache = _tiktoken_cache()
    path = cache / _cache_key(name) if cache is not None else None
    if path is None or not path.is_file():
        return None
    return path if hashlib.sha256(path.read_bytes()).hexdigest() == _ENCODING_SHA256[name] else None


def load_encoding(
    name: str = "o200k_base",
    tokenizers_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = True,
    timeout_s: float = DOWNLOAD_TIMEOUT_S,
) -> Encoding:
    """The tiktoken ``Encoding`` called ``name``, loaded once per process.

    With ``tokenizers_dir`` (or ``$CONTEXTFOLD_TOKENIZERS_DIR``) the BPE file is
    read from there and nowhere else; otherwise from tiktoken's cache, else
    (``download``) fetched within ``timeout_s`` seconds into that cache. The
    network is never used without that bound. Raises
    :class:`TokenizerUnavailable` when tiktoken is not installed or the file
    cannot be had.
    """
    folder = tokenizers_dir if tokenizers_dir is not None else os.environ.get(TOKENIZERS_DIR_ENV)
    key = (name, str(folder) if folder is not None else None)
    with _load_lock:
        if key not in _encodings:
            _encodings[key] = _load_encoding_unlocked(name, folder, download, timeout_s)
        return _encodings[key]


def _load_encoding_unlocked(name: str, folder: str | os.PathLike[str] | None, download: bool, timeout_s: float) -> Encoding:
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable(
            f"exact counting with {name!r} needs tiktoken: {install_hint('tiktoken')}"
        ) from exc
    if name not in _ENCODING_SHA256:
        raise TokenizerUnavailable(f"unknown encoding {name!r}; expected one of {', '.join(_ENCODING_SHA256)}")
    if folder is not None:
        path: Path | None = Path(folder) / f"{name}.tiktoken"
        if not path.exists():  # type: ignore[union-attr]
            raise TokenizerUnavailable(f"no {name}.tiktoken in {folder}")
    else:
        path = cached_file(name)
    if path is None and not download:
        raise TokenizerUnavailable(f"{name}.tiktoken is not on this machine; {OFFLINE_HINT}")
    if path is None:
        path = _download(name, timeout_s)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    cache = _linked_cache({name: path})
    try:
        # tiktoken reads the variable (and the file) at load time only; both go right after.
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
        return tiktoken.get_encoding(name)
    except Exception as exc:  # a damaged file: its hash does not match
        raise TokenizerUnavailable(f"could not load tiktoken encoding {name!r} from {path}: {exc}") from exc
    finally:
        shutil.rmtree(cache, ignore_errors=True)
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


def _download(name: str, timeout_s: float) -> Path:
    """Fetch ``name``'s BPE file within ``timeout_s`` seconds in all, check its hash, keep it in tiktoken's cache."""
    url = _ENCODING_URL.format(name=name)
    deadline = time.monotonic() + timeout_s
    chunks: list[bytes] = []
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:  # proxies from the environment, as usual
            while chunk := response.read(1 << 16):
                chunks.append(chunk)
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not done after {timeout_s:g} s")
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, a proxy that never answers
        raise TokenizerUnavailable(f"could not download {name}.tiktoken within {timeout_s:g} s ({exc}); "
                                   f"{OFFLINE_HINT}") from exc
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != _ENCODING_SHA256[name]:
        raise TokenizerUnavailable(f"the downloaded {name}.tiktoken is damaged (its sha256 does not match)")
    cache = _tiktoken_cache() or Path(tempfile.mkdtemp(prefix="contextfold-tiktoken-"))
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / _cache_key(name)
    partial = Path(f"{path}.{os.getpid()}.tmp")
    partial.write_bytes(data)
    partial.replace(path)  # whole or not at all, as tiktoken writes its cache
    return path


class TiktokenText:
    """Exact token counts with a tiktoken encoding (``o200k_base``: GPT-4o and later; ``cl100k_base``: GPT-4)."""

    def __init__(
        self,
        encoding: str = "o200k_base",
        tokenizers_dir: str | os.PathLike[str] | None = None,
        *,
        download: bool = True,
    ) -> None:
        self._encoding = load_encoding(encoding, tokenizers_dir, download=download)
        self.name = f"tiktoken:{encoding}"

    def __call__(self, text: str) -> int:
        # Special-token text ("<|endoftext|>") in tool output is ordinary text to us.
        return len(self._encoding.encode(text, disallowed_special=()))
