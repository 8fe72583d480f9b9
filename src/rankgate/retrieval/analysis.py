"""Text analysis for lexical retrieval: tokenise, drop stopwords, stem.

An :class:`Analyzer` turns text into terms. It lowercases, splits into word tokens of two or more
characters (``(?u)\\b\\w\\w+\\b``, the usual BM25 pattern; letters with accents and umlauts are word
characters), drops the stopwords of a language and reduces each token with that language's
Snowball stemmer (PyStemmer).

``stemmer`` and ``stopwords`` each take a language (``"en"``, ``"german"``…), ``None`` (off) or
``"auto"``: analyse each text in its own language, given per call (a chunk's ``lang`` metadata, a
query's ``lang`` tag), falling back to ``language`` when a text has none or an unknown one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from rankgate.errors import UsageError

__all__ = ["LANGUAGES", "Analyzer", "normalise_language"]

_TOKEN = re.compile(r"(?u)\b\w\w+\b")

#: ISO 639-1 code -> Snowball stemmer name, for the languages both PyStemmer and bm25s's stopword
#: lists cover. Stemmers for other Snowball languages work too, by their full name, without stopwords.
LANGUAGES: dict[str, str] = {
    "en": "english",
    "de": "german",
    "es": "spanish",
    "fr": "french",
    "it": "italian",
    "nl": "dutch",
    "pt": "portuguese",
    "sv": "swedish",
    "da": "danish",
    "no": "norwegian",
    "ru": "russian",
    "tr": "turkish",
}
_STOPWORD_LISTS = {
    "english": "STOPWORDS_EN",
    "german": "STOPWORDS_GERMAN",
    "spanish": "STOPWORDS_SPANISH",
    "french": "STOPWORDS_FRENCH",
    "italian": "STOPWORDS_ITALIAN",
    "dutch": "STOPWORDS_DUTCH",
    "portuguese": "STOPWORDS_PORTUGUESE",
    "swedish": "STOPWORDS_SWEDISH",
    "danish": "STOPWORDS_DANISH",
    "norwegian": "STOPWORDS_NORWEGIAN",
    "russian": "STOPWORDS_RUSSIAN",
    "turkish": "STOPWORDS_TURKISH",
}


def normalise_language(value: str, *, what: str = "language") -> str:
    """Return the Snowball name for a language code or name; raise UsageError if unknown."""
    name = LANGUAGES.get(value.lower(), value.lower())
    import Stemmer  # type: ignore[import-not-found,unused-ignore]  # PyStemmer; lazy because only lexical retrieval needs it

    if name not in Stemmer.algorithms():
        known = ", ".join(sorted(LANGUAGES))
        raise UsageError(
            f"Unknown {what} {value!r}: expected a language code ({known}) or a Snowball stemmer name "
            f"such as 'finnish'"
        )
    return name


@dataclass(frozen=True)
class Analyzer:
    """Text to terms. Build once; :meth:`terms` is then cheap and deterministic."""

    stemmer: str | None = "auto"
    stopwords: str | None = "auto"
    language: str = "en"
    _stemmers: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    _stopsets: dict[str, frozenset[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Normalise (and validate) at the boundary, so a typo fails before indexing starts.
        object.__setattr__(self, "language", normalise_language(self.language))
        for name in ("stemmer", "stopwords"):
            value = getattr(self, name)
            if value is not None and value != "auto":
                object.__setattr__(self, name, normalise_language(value, what=f"{name} language"))
        if self.stopwords not in (None, "auto") and self.stopwords not in _STOPWORD_LISTS:
            raise UsageError(
                f"No stopword list for {self.stopwords!r}; stopword lists exist for "
                f"{', '.join(sorted(_STOPWORD_LISTS))} (or pass stopwords=None)"
            )

    def _resolve(self, setting: str | None, lang: str | None) -> str | None:
        if setting is None:
            return None
        if setting != "auto":
            return setting
        if lang:
            name = LANGUAGES.get(lang.lower(), lang.lower())
            if name in _STOPWORD_LISTS or name in _known_stemmers():
                return name
        return self.language

    def _stemmer(self, name: str) -> Any:
        if name not in self._stemmers:
            import Stemmer

            self._stemmers[name] = Stemmer.Stemmer(name)
        return self._stemmers[name]

    def _stopset(self, name: str) -> frozenset[str]:
        if name not in self._stopsets:
            attribute = _STOPWORD_LISTS.get(name)
            words: Iterable[str] = ()
            if attribute is not None:
                from bm25s import stopwords as lists

                words = getattr(lists, attribute)
            self._stopsets[name] = frozenset(word.lower() for word in words)
        return self._stopsets[name]

    def terms(self, text: str, lang: str | None = None) -> list[str]:
        """The terms of ``text``, read as language ``lang`` where the settings are ``"auto"``."""
        tokens = _TOKEN.findall(text.lower())
        stop_lang = self._resolve(self.stopwords, lang)
        if stop_lang is not None:
            stopset = self._stopset(stop_lang)
            tokens = [token for token in tokens if token not in stopset]
        stem_lang = self._resolve(self.stemmer, lang)
        if stem_lang is not None:
            tokens = self._stemmer(stem_lang).stemWords(tokens)
        return tokens

    def describe(self) -> dict[str, Any]:
        """The settings, for index ids and run metadata."""
        return {"stemmer": self.stemmer, "stopwords": self.stopwords, "language": self.language}


@functools.lru_cache(maxsize=1)
def _known_stemmers() -> frozenset[str]:
    import Stemmer

    return frozenset(Stemmer.algorithms())
