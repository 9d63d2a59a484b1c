"""Matching a line against a query in time linear in the line, whatever the query.

The agent writes the query, so the query is hostile input: Python's ``re``
backtracks, and ``(a+)+$`` against a line of ``a`` s runs for ever. A query
is therefore either a literal (``str.find``) or a regular expression of a
restricted subset, compiled here to a Thompson automaton and run as a
lazily built DFA: each character of a line is one step, the number of states
is bounded (the cache is dropped when it fills), so matching costs
O(line length x pattern size) at worst and usually one dictionary lookup per
character. A literal every match must contain is looked for first with
``str.find``, so most lines never reach the automaton.

The subset: literal characters, ``.``, classes ``[a-z_]`` and ``[^...]``,
the escapes ``\\d \\w \\s \\D \\W \\S`` and escaped punctuation, groups ``( )``
and ``(?: )``, alternation ``|``, the quantifiers ``* + ?`` and bounded
``{m}``, ``{m,}``, ``{m,n}`` (lazy ``?`` after them is accepted: whether a
line matches does not depend on it), and the anchors ``^`` and ``$`` (start and
end of the line). Back-references, look-around and the like are refused with
:class:`~contextfold.errors.InvalidPattern`: none can be matched in linear time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import InvalidPattern

MAX_PATTERN_CHARS = 1_000
"""A longer query is refused before it is read."""
MAX_AUTOMATON_STATES = 4_000
"""A pattern whose automaton has more states (a wide ``{m,n}`` of a group) is refused."""
MAX_REPEAT = 200
"""The largest bound ``{m,n}`` may give."""
MAX_CACHED_SETS = 2_000
"""DFA states kept before the cache is dropped and rebuilt (bounds memory, keeps the step linear)."""

CharTest = Callable[[str], bool]


@dataclass(frozen=True)
class Match:
    """Where a match ends in the line (the DFA knows ends; a match is shown around its end)."""

    end: int


class Matcher:
    """A compiled query: :meth:`search` says whether (and where) a line matches."""

    def search(self, line: str) -> Match | None:
        raise NotImplementedError

    def may_occur_in(self, text: str) -> bool:
        """Whether a match in ``text`` is possible at all (checked once per item, before its lines)."""
        return True


class Literal(Matcher):
    """A plain substring, optionally ignoring case."""

    def __init__(self, text: str, ignore_case: bool) -> None:
        self.ignore_case = ignore_case
        self.text = text.lower() if ignore_case else text

    def search(self, line: str) -> Match | None:
        found = (line.lower() if self.ignore_case else line).find(self.text)
        return None if found < 0 else Match(min(found + len(self.text), len(line)))

    def may_occur_in(self, text: str) -> bool:
        return self.text in (text.lower() if self.ignore_case else text)


def compile_query(query: str, *, regex: bool, ignore_case: bool = False) -> Matcher:
    """``query`` as a :class:`Matcher`; :class:`InvalidPattern` for an empty, too long or unsupported one."""
    if not isinstance(query, str):
        raise InvalidPattern("query", f"a string is expected, not {type(query).__name__}")
    if not query:
        raise InvalidPattern("query", "the query is empty")
    if len(query) > MAX_PATTERN_CHARS:
        raise InvalidPattern("query", f"{len(query):,} characters; at most {MAX_PATTERN_CHARS:,}")
    if not regex:
        return Literal(query, ignore_case)
    node = _Parser(query).parse()
    return _Automaton(node, ignore_case)


# --------------------------------------------------------------------------- the parse tree

@dataclass(frozen=True)
class _Char:
    test: CharTest
    literal: str | None = None  # the character itself when the node is one plain character


@dataclass(frozen=True)
class _Seq:
    parts: tuple[_Node, ...]


@dataclass(frozen=True)
class _Alt:
    options: tuple[_Node, ...]


@dataclass(frozen=True)
class _Repeat:
    inner: _Node
    low: int
    high: int | None  # None: unbounded


@dataclass(frozen=True)
class _Anchor:
    at_start: bool  # ^ when true, $ when false


_Node = _Char | _Seq | _Alt | _Repeat | _Anchor

_CLASS_ESCAPES: dict[str, CharTest] = {
    "d": str.isdigit,
    "w": lambda c: c.isalnum() or c == "_",
    "s": str.isspace,
}
_PLAIN_ESCAPES = {"n": "\n", "t": "\t", "r": "\r"}
_REFUSED_ESCAPES = "bBAZzGpPNxuU0123456789"


def _escape_test(letter: str, where: int) -> tuple[CharTest, str | None]:
    if letter.lower() in _CLASS_ESCAPES:
        base = _CLASS_ESCAPES[letter.lower()]
        return (base if letter.islower() else (lambda c: not base(c))), None
    if letter in _PLAIN_ESCAPES:
        char = _PLAIN_ESCAPES[letter]
        return (lambda c: c == char), char
    if letter.isalnum() or letter in _REFUSED_ESCAPES:
        raise InvalidPattern("query", f"position {where}: \\{letter} is not supported (back-references, "
                                      "\\b and other escapes cannot be matched in linear time here)")
    return (lambda c: c == letter), letter


class _Parser:
    """Recursive descent over the subset; every refusal names the position in the pattern."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.at = 0

    def parse(self) -> _Node:
        node = self._alternation()
        if self.at < len(self.text):
            raise InvalidPattern("query", f"position {self.at}: unbalanced ')'")
        return node

    def _peek(self) -> str | None:
        return self.text[self.at] if self.at < len(self.text) else None

    def _alternation(self) -> _Node:
        options = [self._sequence()]
        while self._peek() == "|":
            self.at += 1
            options.append(self._sequence())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def _sequence(self) -> _Node:
        parts: list[_Node] = []
        while self._peek() not in (None, "|", ")"):
            parts.append(self._quantified(self._atom()))
        return parts[0] if len(parts) == 1 else _Seq(tuple(parts))

    def _atom(self) -> _Node:
        start, char = self.at, self.text[self.at]
        self.at += 1
        if char == "(":
            if self.text.startswith("?:", self.at):
                self.at += 2
            elif self._peek() == "?":
                raise InvalidPattern("query", f"position {start}: (?...) groups other than (?:...) are not supported")
            inner = self._alternation()
            if self._peek() != ")":
                raise InvalidPattern("query", f"position {start}: '(' is never closed")
            self.at += 1
            return inner
        if char == "[":
            return self._class(start)
        if char == ".":
            return _Char(lambda c: c != "\n")
        if char in "^$":
            return _Anchor(char == "^")
        if char == "\\":
            if self.at >= len(self.text):
                raise InvalidPattern("query", f"position {start}: the pattern ends with a lone backslash")
            test, literal = _escape_test(self.text[self.at], start)
            self.at += 1
            return _Char(test, literal)
        if char in "*+?" or (char == "{" and self._bounds_follow(start)):
            raise InvalidPattern("query", f"position {start}: {char!r} repeats nothing")
        return _Char(lambda c, char=char: c == char, char)  # type: ignore[misc]

    def _class(self, start: int) -> _Node:
        negated = self._peek() == "^"
        self.at += negated
        tests: list[CharTest] = []
        first = True
        while True:
            char = self._peek()
            if char is None:
                raise InvalidPattern("query", f"position {start}: '[' is never closed")
            if char == "]" and not first:
                self.at += 1
                break
            first = False
            self.at += 1
            if char == "\\":
                if self._peek() is None:
                    raise InvalidPattern("query", f"position {start}: '[' is never closed")
                test, low = _escape_test(self.text[self.at], self.at - 1)
                self.at += 1
                if low is None:
                    tests.append(test)
                    continue
            else:
                low = char
            if self._peek() == "-" and self.at + 1 < len(self.text) and self.text[self.at + 1] != "]":
                high = self.text[self.at + 1]
                self.at += 2
                if high == "\\":
                    raise InvalidPattern("query", f"position {self.at - 1}: an escaped range end is not supported")
                if high < low:
                    raise InvalidPattern("query", f"position {self.at - 3}: range {low}-{high} is reversed")
                tests.append(lambda c, lo=low, hi=high: lo <= c <= hi)  # type: ignore[misc]
            else:
                tests.append(lambda c, one=low: c == one)  # type: ignore[misc]
        return _Char((lambda c: not any(t(c) for t in tests)) if negated else (lambda c: any(t(c) for t in tests)))

    def _quantified(self, node: _Node) -> _Node:
        while True:
            char, where = self._peek(), self.at
            if char in ("*", "+", "?"):
                self.at += 1
                low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[char]
            elif char == "{" and self._bounds_follow(self.at):
                low, high = self._bounds()
            else:
                return node
            if isinstance(node, _Anchor):
                raise InvalidPattern("query", f"position {where}: an anchor cannot be repeated")
            if self._peek() == "?":  # lazy: the same lines match
                self.at += 1
            node = _Repeat(node, low, high)

    def _bounds_follow(self, at: int) -> bool:
        """Whether ``{`` at ``at`` opens a bound (``{2}``, ``{2,}``, ``{2,5}``); otherwise it is a plain character."""
        end = self.text.find("}", at)
        body = self.text[at + 1 : end] if end > 0 else ""
        return bool(body) and all(part.isdigit() or part == "" for part in body.split(",", 1)) and body[0] != ","

    def _bounds(self) -> tuple[int, int | None]:
        where = self.at
        end = self.text.index("}", self.at)
        low_text, comma, high_text = self.text[self.at + 1 : end].partition(",")
        self.at = end + 1
        low = int(low_text)
        high = (int(high_text) if high_text else None) if comma else low
        if low > MAX_REPEAT or (high is not None and high > MAX_REPEAT):
            raise InvalidPattern("query", f"position {where}: a bound above {MAX_REPEAT} is not supported")
        if high is not None and high < low:
            raise InvalidPattern("query", f"position {where}: {{{low},{high}}} is reversed")
        return low, high


def _required_literal(node: _Node) -> str:
    """The longest run of plain characters every match must contain ('' when there is none)."""
    if isinstance(node, _Char):
        return node.literal or ""
    if isinstance(node, _Repeat):
        return _required_literal(node.inner) if node.low >= 1 else ""
    if isinstance(node, _Seq):
        best, run = "", ""
        for part in node.parts:
            if isinstance(part, _Char) and part.literal is not None:
                run += part.literal
                continue
            inner = _required_literal(part)
            best, run = max(best, run, inner, key=len), ""
        return max(best, run, key=len)
    return ""


# --------------------------------------------------------------------------- the automaton

@dataclass
class _State:
    """One state of the Thompson automaton: consumes a character (``test``), or moves on without one."""

    test: CharTest | None = None
    out: list[int] = field(default_factory=list)
    anchor: bool | None = None  # True: only at the start; False: only at the end of the line


class _Automaton(Matcher):
    """The Thompson automaton of a parse tree, run as a lazily built DFA over each line."""

    def __init__(self, node: _Node, ignore_case: bool) -> None:
        self.states: list[_State] = []
        self.accept = self._new()
        self.start = self._build(node, self.accept)
        if ignore_case:
            for state in self.states:
                if state.test is not None:
                    plain = state.test
                    state.test = lambda c, t=plain: t(c) or t(c.lower()) or t(c.upper())
        literal = _required_literal(node)
        self.required = (literal.lower() if ignore_case else literal) if literal else ""
        self.ignore_case = ignore_case
        self._start_middle = self._closure({self.start}, at_start=False)
        self._start_first = self._closure({self.start}, at_start=True)
        self._moves: dict[tuple[frozenset[int], str], frozenset[int]] = {}

    def _new(self, test: CharTest | None = None, anchor: bool | None = None) -> int:
        if len(self.states) >= MAX_AUTOMATON_STATES:
            raise InvalidPattern("query", f"the pattern needs more than {MAX_AUTOMATON_STATES:,} automaton states")
        self.states.append(_State(test, [], anchor))
        return len(self.states) - 1

    def _build(self, node: _Node, then: int) -> int:
        """The state that starts ``node``, continuing to ``then`` once it has matched."""
        if isinstance(node, _Char):
            state = self._new(node.test)
            self.states[state].out.append(then)
            return state
        if isinstance(node, _Anchor):
            state = self._new(anchor=node.at_start)
            self.states[state].out.append(then)
            return state
        if isinstance(node, _Seq):
            for part in reversed(node.parts):
                then = self._build(part, then)
            return then
        if isinstance(node, _Alt):
            fork = self._new()
            self.states[fork].out.extend(self._build(option, then) for option in node.options)
            return fork
        optional_from = then
        if node.high is None:  # a loop: inner back to the fork, or on
            loop = self._new()
            self.states[loop].out.extend([self._build(node.inner, loop), then])
            optional_from = loop
        else:
            for _ in range(node.high - node.low):
                fork = self._new()
                self.states[fork].out.extend([self._build(node.inner, optional_from), then])
                optional_from, then = fork, fork
        for _ in range(node.low):
            optional_from = self._build(node.inner, optional_from)
        return optional_from

    def _closure(self, seeds: set[int] | frozenset[int], *, at_start: bool, at_end: bool = False) -> frozenset[int]:
        seen: set[int] = set()
        stack = list(seeds)
        while stack:
            index = stack.pop()
            if index in seen:
                continue
            state = self.states[index]
            seen.add(index)  # a blocked anchor stays in the set: at the line's end, ``$`` is passed
            if state.anchor is not None and not (at_start if state.anchor else at_end):
                continue
            if state.test is None:
                stack.extend(state.out)
        return frozenset(seen)

    def may_occur_in(self, text: str) -> bool:
        if not self.required:
            return True
        return self.required in (text.lower() if self.ignore_case else text)

    def search(self, line: str) -> Match | None:
        if self.required and self.required not in (line.lower() if self.ignore_case else line):
            return None
        current = self._start_first
        moves = self._moves
        for position, char in enumerate(line):
            if self.accept in current:
                return Match(position)
            key = (current, char)
            following = moves.get(key)
            if following is None:
                if len(moves) >= MAX_CACHED_SETS:
                    moves.clear()
                stepped = {out for index in current if (test := self.states[index].test) is not None and test(char)
                           for out in self.states[index].out}
                following = moves[key] = self._closure(stepped, at_start=False) | self._start_middle
            current = following
        if self.accept in self._closure(current, at_start=not line, at_end=True):
            return Match(len(line))
        return None
