"""Secrets out of every message: the one step text passes before rankgate prints or stores it.

A secret is registered once, where rankgate reads it: the judge's API key (:mod:`rankgate.judges.openai`),
the GitHub token and a password in ``GITHUB_API_URL`` (:mod:`rankgate.report.github`), a password in
the judge URL. :func:`redact` then replaces, in any text, with ``***``:

* a registered value, and any run of :data:`MIN_RUN` or more of its characters (gateways and proxies
  print a key's first or last characters: ``sk-proj-AbC…xYz``), together with the rest of the word
  it stands in (letters, digits and ``+/=_-``);
* its Basic-auth form: the base64 of ``user:value`` for any user (matched through the base64 of the
  value itself at each of the three byte alignments; the whole base64 word goes, so neither the user
  nor the value's first or last characters can be decoded from what is left);
* the userinfo of any URL (``https://user:password@host`` becomes ``https://***@host``), registered
  or not.

A value shorter than :data:`MIN_RUN` characters is replaced only where it stands as a whole word (so
a key ``abc`` does not blank every ``abc`` in a message). Where text leaves rankgate — the CLI's error
lines and ``--debug`` tracebacks, a judge call's error (stderr, ``answers.csv``, ``summary.json``, the
labels file), a judge's reply before it is cached, the PR comment client's messages — it passes
:func:`redact`. Thread-safe: registering swaps an immutable table that readers take whole.
"""

from __future__ import annotations

import base64
import re
import threading
import urllib.parse
from dataclasses import dataclass

__all__ = ["MASK", "MIN_RUN", "redact", "register", "register_url", "registered", "restore"]

MASK = "***"
MIN_RUN = 6  # the shortest run of a secret's characters that is replaced wherever it appears
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")

# scheme://userinfo@ : the userinfo runs to the last "@" before the host's end (/ ? # or a space/quote)
_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/?#'\"<>()\[\]{}\\]*@")


@dataclass(frozen=True)
class _Table:
    values: frozenset[str] = frozenset()
    runs: frozenset[str] = frozenset()      # every MIN_RUN-character piece of a long value or its base64 forms
    words: re.Pattern[str] | None = None    # short values, as whole words


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
            runs.update(form[i:i + MIN_RUN] for i in range(len(form) - MIN_RUN + 1))
    words = None
    if short:
        alternatives = "|".join(re.escape(v) for v in sorted(short, key=len, reverse=True))
        words = re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])")
    return _Table(values, frozenset(runs), words)


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
        text = _mask_runs(text, table.runs)
    return text


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
    out: list[str] = []
    last = 0
    for a, b in spans:
        out.append(text[last:a])
        out.append(MASK)
        last = b
    out.append(text[last:])
    return "".join(out)
