"""Secrets out of every message: the one step text passes before rankgate prints or stores it.

A secret is registered once, where rankgate reads it: the judge's API key (:mod:`rankgate.judges.openai`),
the GitHub token and a password in ``GITHUB_API_URL`` (:mod:`rankgate.render.github`), a password in
the judge URL. :func:`redact` then replaces, in any text, with ``***``:

* a registered value, and any run of :data:`MIN_RUN` or more of its characters (gateways and proxies
  print a key's first or last characters: ``sk-proj-AbC…xYz``), together with the rest of the word
  it stands in (letters, digits and ``+/=_-``);
* its Basic-auth form: the base64 of ``user:value`` for any user (matched through the base64 of the
  value itself at each of the three byte alignments; the whole base64 word goes, so neither the user
  nor the value's first or last characters can be decoded from what is left);
* the userinfo of any URL (``https://user:password@host`` becomes ``https://***@host``), registered
  or not;
* the same, echoed by a server in another layout: runs of a secret are also looked for in the text with
  its whitespace taken out and its percent-escapes decoded (a key printed in 5-character lines, split
  by ``\r\n``, or written ``sk%2Dproj…``, fully or in part), and what they came from is replaced, line
  breaks included. A best-effort guard: hex and reversed echoes are not looked for, nor a secret that
  holds a percent-escape of its own split across lines.

A value shorter than :data:`MIN_RUN` characters is replaced only where it stands as a whole word (so
a key ``abc`` does not blank every ``abc`` in a message). Where text leaves rankgate — the CLI's error
lines and ``--debug`` tracebacks, a judge call's error (stderr, ``answers.csv``, ``summary.json``, the
labels file), a judge's reply before it is cached, the PR comment client's messages — it passes
:func:`redact` (:func:`redact_line` where the text must stay one line, as a judge call's error).
Thread-safe: registering swaps an immutable table that readers take whole.

Where a secret may be sent: :func:`origin` is the part of a URL that two addresses must share for an
HTTP client to send them the same credential (scheme, host and port), and the form of an address a
message may show (no userinfo, path or query).
"""

from __future__ import annotations

import base64
import re
import threading
import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["MASK", "MIN_RUN", "origin", "redact", "redact_line", "register", "register_url", "registered", "restore"]

MASK = "***"
MIN_RUN = 6  # the shortest run of a secret's characters that is replaced wherever it appears
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")

# scheme://userinfo@ : the userinfo runs to the last "@" before the host's end (/ ? # or a space/quote)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#'\"<>()\[\]{}\\]*@")
# what a server's echo may put between a secret's characters, or write in their place: whitespace, escapes
_FOLD = re.compile(r"\s+|(?:%[0-9A-Fa-f]{2})+")
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class _Table:
    values: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()      # every MIN_RUN-character piece of a long value or its base64 forms
                                            # (and of each with its whitespace taken out)
    words: re.Pattern[str] | None = None    # short values, as whole words
    spaced: bool = False                    # some piece holds whitespace (which folding takes out of a text)


_lock = threading.Lock()
_table = _Table()


def _forms(value: str) -> list[str]:
    """The value and its base64 at each byte alignment (what shows inside base64 of ``user:value``)."""
    raw = value.encode("utf-8")
    forms = [value]
    for skip in range(3):
        whole = (len(raw) - skip) // 3 * 3  # only complete 3-byte groups encode the same in any context
        if whole > 0:
            forms.append(base64.b64encode(raw[skip:skip + whole]).decode("ascii"))
    return forms


def _build(values: frozenset[str]) -> _Table:
    runs: set[str] = set()
    short: list[str] = []
    for value in values:
        if len(value) < MIN_RUN:
            short.append(value)
        for form in _forms(value):
            for text in {form, "".join(form.split())}:  # a value holding spaces, as a folded text shows it
                runs.update(text[i:i + MIN_RUN] for i in range(len(text) - MIN_RUN + 1))
    words = None
    if short:
        alternatives = "|".join(re.escape(v) for v in sorted(short, key=len, reverse=True))
        words = re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")
    return _Table(values, frozenset(runs), words, any(char.isspace() for run in runs for char in run))


def register(*values: str | None) -> None:
    """Treat each non-empty value as a secret from now on (in this process)."""
    global _table
    new = {v for v in values if isinstance(v, str) and v.strip()}
    with _lock:
        if new <= _table.values:
            return
        _table = _build(_table.values | new)


def register_url(url: str | None) -> None:
    """Register the password in a URL's userinfo (or the user, when it stands alone: a token as user)."""
    if not url or "@" not in url:
        return
    try:
        parts = urllib.parse.urlsplit(url.strip())
        user, password = parts.username, parts.password
    except ValueError:
        return
    secret = password if password else user
    if secret:
        register(secret, urllib.parse.unquote(secret))


def registered() -> frozenset[str]:
    """The values registered so far (for :func:`restore`)."""
    return _table.values


def restore(values: frozenset[str]) -> None:
    """Forget every value registered after :func:`registered` returned ``values``."""
    global _table
    with _lock:
        _table = _build(values) if values else _Table()


def redact(text: str) -> str:
    """``text`` with every registered secret, its Basic-auth form, runs of it, and URL userinfo as ``***``."""
    if not text:
        return text
    if "@" in text:
        text = _USERINFO.sub(lambda m: m.group("scheme") + MASK + "@", text)
    table = _table
    if table.words is not None:
        text = table.words.sub(MASK, text)
    if table.runs:
        text = _mask_folded(text, table.runs)
        if table.spaced or "%" in text:  # pieces folding may hide: a secret's own whitespace, a decoded escape
            text = _mask_runs(text, table.runs)
    return text


def redact_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks included) as one space, then :func:`redact`: a
    message that must stay one line, whatever a server put in it."""
    return redact(" ".join(text.split()))


def origin(url: str) -> str:
    """``scheme://host[:port]`` of ``url``, lower-cased, the scheme's default port left out.

    Two URLs with the same origin are the same server to a credential: a client sends its token only
    to its own origin. Safe to show: no userinfo, path or query (a port that is not a number is kept
    as written, so such a URL never equals a valid one).
    """
    parts = urllib.parse.urlsplit(url.strip())
    scheme = parts.scheme.lower()
    try:
        host, port = parts.hostname or "", parts.port
    except ValueError:
        return f"{scheme}://{parts.netloc.rpartition('@')[2].lower()}"
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != _DEFAULT_PORTS.get(scheme) else "")


def _mask_runs(text: str, runs: frozenset[str]) -> str:
    """Replace each word of ``text`` holding a piece found in ``runs`` (pieces that overlap or touch, and the
    word characters around them, are one stretch)."""
    n = MIN_RUN
    spans: list[tuple[int, int]] = []
    start = end = -1
    for i in range(len(text) - n + 1):
        if text[i:i + n] in runs:
            if start >= 0 and i <= end:
                end = i + n
            else:
                if start >= 0:
                    spans.append((start, end))
                start = i
                while start > 0 and text[start - 1] in _WORD and (not spans or start > spans[-1][1]):
                    start -= 1
                end = i + n
        elif start >= 0 and i == end and text[i] in _WORD:
            end = i + 1  # the rest of the word the piece stands in
    if start < 0:
        return text
    while end < len(text) and text[end] in _WORD:
        end += 1
    spans.append((start, end))
    return _masked(text, spans)


def _unescaped(escapes: str, at: int) -> list[tuple[str, int, int]]:
    """The characters a run of percent-escapes (starting at ``at`` in its text) stands for, each with
    the span of the text it came from; a byte that is not UTF-8 is one U+FFFD, whitespace none."""
    raw = bytes.fromhex(escapes.replace("%", ""))
    out: list[tuple[str, int, int]] = []
    i = 0
    while i < len(raw):
        lead = raw[i]
        n = 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4
        try:
            char = raw[i:i + n].decode("utf-8")
        except UnicodeDecodeError:
            char, n = "\ufffd", 1
        if not char.isspace():
            out.append((char, at + 3 * i, at + 3 * (i + n)))
        i += n
    return out


def _folded(m: re.Match[str]) -> str:
    """What one match of :data:`_FOLD` folds to (:func:`_fold`)."""
    return "" if m.group()[0] != "%" else "".join(char for char, _, _ in _unescaped(m.group(), 0))


def _fold(text: str) -> tuple[str, list[int], list[int]]:
    """``text`` without whitespace, its percent-escapes decoded, and where each of its characters starts
    and ends in ``text``."""
    chars: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    last = 0
    for m in _FOLD.finditer(text):
        chars.append(text[last:m.start()])
        starts.extend(range(last, m.start()))
        ends.extend(range(last + 1, m.start() + 1))
        if text[m.start()] == "%":
            for char, a, b in _unescaped(m.group(), m.start()):
                chars.append(char)
                starts.append(a)
                ends.append(b)
        last = m.end()
    chars.append(text[last:])
    starts.extend(range(last, len(text)))
    ends.extend(range(last + 1, len(text) + 1))
    return "".join(chars), starts, ends


def _mask_folded(text: str, runs: frozenset[str]) -> str:
    """Replace what holds a piece found in ``runs`` once ``text`` is folded (:func:`_fold`): the
    characters it came from, whitespace and escapes between them, and the word characters around.
    Every piece of ``text`` without whitespace or escapes is one of the folded text too, so this
    finds what :func:`_mask_runs` finds, and more."""
    # where each character came from is worked out only for a match
    folded = _FOLD.sub(_folded, text) if "%" in text else "".join(text.split())
    n = MIN_RUN
    stretches: list[list[int]] = []  # in the folded text: pieces that overlap are one (touching ones may
    for i in range(len(folded) - n + 1):  # be two words that folding joined)
        if folded[i:i + n] in runs:
            if stretches and i < stretches[-1][1]:
                stretches[-1][1] = i + n
            else:
                stretches.append([i, i + n])
    if not stretches:
        return text
    _, starts, ends = _fold(text)
    spans: list[list[int]] = []
    for fa, fb in stretches:
        a, b = starts[fa], ends[fb - 1]
        while a > 0 and text[a - 1] in _WORD:
            a -= 1
        while b < len(text) and text[b] in _WORD:
            b += 1
        if spans and a <= spans[-1][1]:
            spans[-1][1] = max(spans[-1][1], b)
        else:
            spans.append([a, b])
    return _masked(text, spans)


def _masked(text: str, spans: Iterable[Sequence[int]]) -> str:
    """``text`` with each of ``spans`` (ordered, apart: ``(start, end)`` pairs) written as :data:`MASK`."""
    out: list[str] = []
    last = 0
    for a, b in spans:
        out.append(text[last:a])
        out.append(MASK)
        last = b
    out.append(text[last:])
    return "".join(out)
