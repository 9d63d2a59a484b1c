"""One exception tree for everything contextfold raises on purpose.

Callers catch at the level they care about: ``ContextfoldError`` for "anything
from us", ``InvalidMessage`` for "the input I handed over is malformed",
``StorageError`` for "the session's record could not be kept or read" (its
transcript, ``TranscriptError``, or its store, ``StoreError``), and so on. Every error about a message carries the message index and the field, so
the fault can be found in a list of thousands of messages.
"""

from __future__ import annotations

__all__ = [
    "BlobNotFound",
    "ContextOverflow",
    "ContextfoldError",
    "EmptyContent",
    "HistoryQueryError",
    "HistoryRefNotFound",
    "InvalidContent",
    "InvalidConversation",
    "InvalidEncoding",
    "InvalidLimits",
    "InvalidMessage",
    "InvalidOption",
    "InvalidPattern",
    "InvalidPipeline",
    "InvalidPolicy",
    "InvalidSessionId",
    "InvalidToolArguments",
    "MissingDependency",
    "OutputNotStored",
    "OversizedBlock",
    "ProviderRequired",
    "RequestOverWindow",
    "SessionExists",
    "SessionFormatError",
    "SessionNotFound",
    "StorageError",
    "StoreError",
    "StoreUnavailable",
    "SummarizerError",
    "SummaryInProgress",
    "TokenizerUnavailable",
    "TranscriptCorrupt",
    "TranscriptError",
    "TranscriptForked",
    "TranscriptLocked",
    "TranscriptUnsafe",
    "UnknownModel",
    "UnknownPrice",
    "UnknownPriceWarning",
    "UnknownRole",
    "UnknownSessionFormat",
    "UnsafePath",
    "UsageMismatch",
    "ViewConflict",
    "WireOnlyProvider",
]


class ContextfoldError(Exception):
    """Base of every error contextfold raises deliberately."""


class InvalidConversation(ContextfoldError):
    """A conversation (or a message in it) breaks the rules of its format."""


class InvalidMessage(InvalidConversation):
    """One message is malformed.

    ``index`` is the 0-based position of the message in the list the caller
    passed; ``field`` is a dotted path inside that message (``content[2].input``).
    """

    def __init__(self, index: int | None, field: str, reason: str) -> None:
        self.index = index
        self.field = field
        self.reason = reason
        where = f"message {index}" if index is not None else "message"
        super().__init__(f"{where}, field {field!r}: {reason}")


class UnknownRole(InvalidMessage):
    """A role the format does not define."""


class InvalidToolArguments(InvalidMessage):
    """Tool-call arguments that are not a JSON object."""


class InvalidContent(InvalidMessage):
    """Content of the wrong type or shape for its format."""


class EmptyContent(InvalidMessage):
    """Content the provider would reject for being empty."""


class InvalidEncoding(InvalidMessage):
    """Text that cannot be encoded as UTF-8 (lone surrogates, undecodable bytes)."""


class OversizedBlock(InvalidMessage):
    """A single block larger than any provider accepts in one request."""


class _InFile(ContextfoldError):
    """A fault at one place in a file: ``path``, ``location`` in it (a line, a record, a JSON path), ``reason``."""

    def __init__(self, path: str, location: str, reason: str) -> None:
        self.path = path
        self.location = location
        self.reason = reason
        super().__init__(f"{path}, {location}: {reason}")


class SessionFormatError(_InFile):
    """A recorded session file could not be read in the format it claims.

    ``location`` names where in the file: a line number, a record index or a
    JSON path.
    """


class UnknownSessionFormat(SessionFormatError):
    """No importer recognised the file."""


class StorageError(ContextfoldError):
    """A session's record could not be kept or read: its transcript file (:class:`TranscriptError`) or the
    store it lives in (:class:`StoreError`). What a caller that degrades on a failed record catches: opening
    a session degrades the same way whichever failed. Messages never carry credentials."""


class TranscriptError(StorageError):
    """The append-only transcript could not be written or read."""


class InvalidSessionId(TranscriptError, ValueError):
    """A session id that is not 1-128 letters, digits, ``.``, ``_`` or ``-`` starting with a letter or digit.

    Refused by every store, not only by a folder whose file names it: a session some store accepted
    under another id could never be opened from a folder, exported or resumed by the CLI.
    """


class TranscriptCorrupt(TranscriptError):
    """A record in the middle of a transcript is not valid (not a torn tail): ``path``, its ``line`` (from 1, also
    as ``location``, where :class:`SessionFormatError` names it) and the ``reason``."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path, self.line, self.location, self.reason = path, line, f"line {line}", reason
        super().__init__(f"{path}, line {line}: {reason}")


class UnsafePath(ContextfoldError):
    """A file or folder contextfold would write is a symbolic link, not a regular file,
    shared through a hard link, owned by someone else or writable by others.

    ``path`` names it; nothing was read from it or written to it.
    """

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class TranscriptUnsafe(TranscriptError):
    """The transcript file or its folder failed the safety checks of :class:`UnsafePath` (``path`` names it, the
    ``reason`` says which); a storage error, so opening a session degrades on it as on any other."""

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class TranscriptLocked(TranscriptError):
    """Another writer (another process, or another Context in this one) holds the session."""


class TranscriptForked(TranscriptError):
    """The transcript was opened by another process (this one is a fork); only the opener may write."""


class OutputNotStored(ContextfoldError):
    """A tool output too large to keep that could not be saved to disk either.

    The call is still answered: its result says the output was lost and why.
    """


class TokenizerUnavailable(ContextfoldError):
    """An exact tokenizer was asked for but cannot be loaded here."""


def install_hint(extra: str) -> str:
    """The command that installs contextfold's ``extra``, as it works where contextfold is installed from.

    contextfold is installed from its checkout (it is not on a package
    index), so ``pip install 'contextfold[extra]'`` would fail as printed.
    """
    return f"python3 -m pip install -e '.[{extra}]' in contextfold's checkout"


class MissingDependency(ContextfoldError, ImportError):
    """An optional package a feature needs is not installed; the message names the extra that installs it."""

    def __init__(self, package: str, extra: str, why: str, instead: str = "") -> None:
        self.package = package
        self.extra = extra
        super().__init__(f"{package} is not installed ({why}): {install_hint(extra)}"
                         + (f", or {instead}" if instead else ""))


class UnknownModel(ContextfoldError, KeyError):
    """A model name the registry cannot resolve; register it or pass its limits."""

    def __init__(self, model: str, close: tuple[str, ...] = ()) -> None:
        self.model = model
        self.close = close
        guess = f" (did you mean {' or '.join(close)}?)" if close else ""
        super().__init__(f"unknown model {model!r}{guess}: register it with register_model() or pass its limits")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class UnknownPrice(UnknownModel):
    """No list price is known for a model (it may well have known limits): the table does not guess one."""

    def __init__(self, model: str, as_of: str) -> None:
        super(UnknownModel, self).__init__(  # the message is not UnknownModel's: the name may be a known model
            f"no list price is known for model {model!r}: contextfold's price table (as of {as_of}) lists only "
            "prices it could confirm; give Prices(...) yourself")
        self.model = model
        self.close = ()


class ContextOverflow(ContextfoldError):
    """Even the smallest request contextfold can make does not fit the window.

    Raised only after every way down was tried (summary with a shorter tail,
    per-kind rules, old and latest outputs cut); ``smallest_tokens`` is the
    size of that smallest request, ``window_tokens`` the window it had to fit.
    """

    def __init__(self, smallest_tokens: int, window_tokens: int, what: str, limit_tokens: int | None = None) -> None:
        self.smallest_tokens = smallest_tokens
        self.window_tokens = window_tokens
        over = f"over the {window_tokens:,}-token window"
        if limit_tokens is not None and smallest_tokens <= window_tokens:  # over the margin kept for counting only
            over = (f"over the {limit_tokens:,} tokens that surely fit the {window_tokens:,}-token window (the rest is "
                    f"kept free: what was added since the provider last counted is an estimate)")
        super().__init__(
            f"the smallest request contextfold can make is {smallest_tokens:,} tokens, {over}: {what}; use a model "
            "with a larger window, or shorten the system prompt, tools or task"
        )


class RequestOverWindow(ContextOverflow):
    """The request is over the window and the policy's mode lets nothing compact it now.

    ``Policy(mode="manual")`` compacts only when asked (``Context.compact()``,
    ``/compact``, the agent's tool), ``mode="off"`` never: rather than send a
    request the provider would refuse, the step raises this, with the request's
    size (``smallest_tokens``), the ``window_tokens`` and the ``mode``. A
    :class:`ContextOverflow`, so a caller that handles that handles this too.
    """

    def __init__(self, tokens: int, window_tokens: int, mode: str) -> None:
        self.mode = mode
        remedy = ("call compact() (or /compact) first, or" if mode == "manual" else
                  "set Policy(mode=\"auto\") or \"manual\" and compact, or")
        ContextfoldError.__init__(
            self, f"the request is {tokens:,} tokens, over the {window_tokens:,}-token window, and Policy(mode="
                  f"{mode!r}) does not compact it on its own: {remedy} start a fresh context")
        self.smallest_tokens = tokens
        self.window_tokens = window_tokens


class SummarizerError(ContextfoldError):
    """A summarizer failed to produce a usable summary."""


class SummaryInProgress(ContextfoldError):
    """Another worker holds the session's summary lease: this one does not summarize the same span.

    The step reads the session again (to take the other worker's summary) or goes on unsummarized.
    """


class StoreError(StorageError):
    """A session store (JSONL folder, SQLite, PostgreSQL, Redis) could not be reached, written or read.

    Beside :class:`TranscriptError` under :class:`StorageError`: a caller that degrades on either catches
    that. Messages never carry credentials.
    """


class StoreUnavailable(StoreError):
    """A write could not be made durable (a full disk, a database out of reach), even after retrying.

    Nothing it names was acknowledged. The records are kept in memory, in
    order, and written first by the next write once the store accepts again
    (so they are not to be added again); ``waiting`` is how many records wait.
    """

    def __init__(self, message: str, waiting: int = 0) -> None:
        self.waiting = waiting
        super().__init__(message)


class SessionNotFound(StoreError):
    """The store holds no session with this id (resuming never creates one silently)."""

    def __init__(self, store: str, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        super().__init__(f"{store}: no session {session_id!r}")


class BlobNotFound(StoreError):
    """The session holds no blob under this digest (it was never put there, its session was pruned, or the
    name given is not a digest at all: ``digest`` says which was asked for)."""

    def __init__(self, store: str, session_id: str, digest: str, reason: str = "no such blob") -> None:
        self.store = store
        self.session_id = session_id
        self.digest = digest
        super().__init__(f"{store}#{session_id}: blob {digest[:80]!r}: {reason}")


class SessionExists(StoreError):
    """A session with this id is already in the store, so it cannot be created again."""

    def __init__(self, store: str, session_id: str) -> None:
        self.store = store
        self.session_id = session_id
        super().__init__(f"{store}: session {session_id!r} already exists")


class ViewConflict(StoreError):
    """A view change was based on a view that is no longer current: another writer changed it first.

    ``expected`` is the revision (the sequence number of the view checkpoint)
    the change started from, ``current`` the one the store holds. Nothing was
    written; re-read the session and decide again.
    """

    def __init__(self, store: str, session_id: str, expected: int, current: int) -> None:
        self.store = store
        self.session_id = session_id
        self.expected = expected
        self.current = current
        super().__init__(f"{store}: session {session_id!r}: the view changed (revision {current}) "
                         f"since it was read (revision {expected})")


class InvalidPolicy(ContextfoldError, ValueError):
    """A :class:`~contextfold.Policy` knob out of its range, of the wrong type, or in conflict with another.

    ``field`` names the knob; nothing is silently preferred over another.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"Policy.{field}: {reason}")


class InvalidLimits(ContextfoldError, ValueError):
    """A window or reply limit that cannot be used: not a positive whole number of tokens, or a reply limit
    that leaves no room for a prompt (``reason`` says so, with both figures); ``field`` names which
    (``context_window``, ``max_output_tokens``)."""

    def __init__(self, field: str, value: object, reason: str | None = None) -> None:
        self.field = field
        self.value = value
        super().__init__(f"ModelLimits.{field}: {reason}" if reason
                         else f"ModelLimits.{field} must be a positive whole number of tokens, got {value!r}")


class ProviderRequired(ContextfoldError, ValueError):
    """A model whose API cannot be told from its name: give ``provider`` (one of ``known``)."""

    def __init__(self, model: str, known: tuple[str, ...]) -> None:
        self.model = model
        super().__init__(f"cannot tell which API serves model {model!r}: pass provider= (one of {', '.join(known)}), "
                         "or register the model with register_model(..., provider=...)")


class UnknownPriceWarning(UserWarning):
    """No list price is known for the model a :class:`~contextfold.Context` runs: its cache decisions use the
    documented default prices (:data:`~contextfold.pipeline.base.DEFAULT_PRICES`) until ``Policy(prices=...)``
    gives its own."""


class WireOnlyProvider(ContextfoldError):
    """A provider registered as a wire format only (its adapter's ``client`` is ``None``: no SDK) was asked for what
    needs an SDK client: sending a request, a model summary, the reference agent, the provider's own compaction.

    ``provider`` names it; ``needed`` what asked (:meth:`~contextfold.adapters.Adapter.require_client`). Its
    requests are still rendered by :meth:`~contextfold.Context.prepare` and its replies read by
    :meth:`~contextfold.Context.add_response`: the caller sends them."""

    def __init__(self, provider: str, needed: str) -> None:
        self.provider = provider
        self.needed = needed
        super().__init__(f"provider {provider!r} is a wire format with no SDK client, which {needed} needs: "
                         "send the request Context.prepare() renders yourself and pass the reply to "
                         "Context.add_response()")


class UsageMismatch(UserWarning):
    """The prompt size a provider reported for the first request is under a fifth of contextfold's own count of it
    (:data:`~contextfold.tokens.anchored.MISMATCH_FACTOR`): fewer tokens than the request visibly holds.

    The reported figure anchors every later count (:meth:`~contextfold.adapters.Adapter.read_usage`), so a
    provider (or a test double) reporting a wrong figure would make the context under- or over-count silently:
    a fake usage of 234 tokens for 72,000 characters let the view grow far past the window. ``reported`` and
    ``estimated`` are the two figures."""

    def __init__(self, reported: int, estimated: int) -> None:
        self.reported = reported
        self.estimated = estimated
        super().__init__(f"the provider reported {reported:,} prompt tokens for the first request, but it counts "
                         f"{estimated:,}: the reported usage anchors every later count, so check the adapter's "
                         "read_usage (or the server's usage figures)")


class InvalidPipeline(ContextfoldError, ValueError):
    """A pipeline that cannot be built or run as asked: a stage it does not hold, one added twice, or a stage
    that returned something other than ``(Conversation, list[Event])``. ``stage`` names the stage."""

    def __init__(self, stage: str, reason: str) -> None:
        self.stage = stage
        self.reason = reason
        super().__init__(f"stage {stage!r}: {reason}")


class InvalidOption(ContextfoldError, TypeError):
    """A keyword argument a call does not take, or not in that form: ``option`` names it, and the message says
    what to write instead (``Context(transcript=...)`` is ``Context(storage=Storage(transcript=...))``). A
    :class:`TypeError`, as Python's own refusal of an unknown keyword is."""

    def __init__(self, option: str, reason: str) -> None:
        self.option = option
        self.reason = reason
        super().__init__(f"{option!r}: {reason}")


class HistoryQueryError(ContextfoldError, ValueError):
    """A call of the history tools (``search_history``, ``read_history``) with an argument it cannot take.

    ``field`` names the argument (``query``, ``ref``, ``lines``, ...); the agent reads the message, so it
    says what would be accepted instead.
    """

    def __init__(self, field: str, reason: str) -> None:
        self.field = field
        self.reason = reason
        super().__init__(f"argument {field!r}: {reason}")


class InvalidPattern(HistoryQueryError):
    """A search query that is empty, too long, or a regular expression outside the linear-time subset."""


class HistoryRefNotFound(HistoryQueryError):
    """A ref that names no item of this session's history (another session's, a path, a made-up id)."""
