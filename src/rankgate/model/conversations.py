"""Conversations in gold sets and runs: the fields that say which queries are turns of one conversation.

A gold query (or a run record) may carry ``conversation_id`` (a string or a whole number, kept as a
string), ``turn`` (its position in the conversation, a positive integer, 1 for the first turn) and, in the
gold set, ``depends_on_turns`` (the earlier turns whose context this turn's retrieval needs, a list of
positive integers each below ``turn``). One conversation's turns are unique. The statistics resample
conversations when they exist (:mod:`rankgate.stats.clusters`); the ``turn`` segment splits first turns
from follow-ups.

The checks here are the readers' (every reader of gold sets and runs calls them), so an error names the
file, the line and the field, what was expected and what to do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankgate.errors import InputError

__all__ = ["CONVERSATION_FIELDS", "FIRST_TURN", "FOLLOW_UP", "MAX_TURN", "check_conversation_id", "check_depends_on_turns",
           "check_turn", "check_unique_turns", "turn_label"]

CONVERSATION_FIELDS = ("conversation_id", "turn", "depends_on_turns")
FIRST_TURN = "first"
FOLLOW_UP = "follow_up"
MAX_TURN = 1_000_000  # a turn number beyond this is a mistake (a timestamp, an id), not a conversation's turn


def turn_label(turn: Any) -> str | None:
    """The ``turn`` segment of a query: ``first`` for turn 1, ``follow_up`` after it, None when not given."""
    if turn is None:
        return None
    if turn in (FIRST_TURN, FOLLOW_UP):
        return str(turn)
    try:
        return FIRST_TURN if int(turn) <= 1 else FOLLOW_UP
    except (TypeError, ValueError):
        return None


def _whole(value: Any) -> Any:
    """A numpy integer (in-memory data) or an integral float (a table column with gaps) as an int."""
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def check_conversation_id(value: Any, path: str, line: int | None) -> str | None:
    """A ``conversation_id`` as its text (None when null); a non-empty string or a whole number."""
    if value is None:
        return None
    value = _whole(value)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or (isinstance(value, str) and not value.strip()):
        raise InputError(f"must be a non-empty string (or a whole number); got {value!r}"[:120], path=path, line=line,
                         field="conversation_id", hint="give every turn of one conversation the same conversation_id")
    return str(value)


def check_turn(value: Any, path: str, line: int | None) -> int | None:
    """A ``turn`` as an int (None when null): a positive integer, 1 for a conversation's first turn."""
    if value is None:
        return None
    value = _whole(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TURN:
        raise InputError(f"must be a positive integer (1 for the first turn) up to {MAX_TURN:,}; got {value!r}"[:120],
                         path=path, line=line, field="turn")
    return value


def check_depends_on_turns(value: Any, turn: int | None, path: str, line: int | None) -> list[int] | None:
    """``depends_on_turns`` as a sorted list of distinct ints (None when null): earlier turns of the same
    conversation, so each a positive integer below this query's ``turn`` (which must be given)."""
    if value is None:
        return None
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if not isinstance(value, (list, tuple)):
        raise InputError(f"must be a list of earlier turn numbers, e.g. [1]; got {value!r}"[:120], path=path, line=line,
                         field="depends_on_turns")
    if turn is None:
        raise InputError("is given but the query has no turn", path=path, line=line, field="depends_on_turns",
                         hint="give the query its turn (1 for the first) beside depends_on_turns")
    out: set[int] = set()
    for item in value:
        item = _whole(item)
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item < turn:
            raise InputError(f"must list earlier turns (whole numbers from 1 to {turn - 1}) of this turn {turn}; "
                             f"got {item!r}"[:160], path=path, line=line, field="depends_on_turns",
                             hint="a turn depends only on turns before it in the same conversation")
        out.add(item)
    return sorted(out)


def check_unique_turns(conversations: Sequence[Any], turns: Sequence[Any], query_ids: Sequence[str], path: str,
                       lines: Sequence[int | None] | None = None) -> None:
    """One conversation's turns are unique: an InputError naming both queries (and the second's line) when two
    queries of one conversation give the same turn."""
    seen: dict[tuple[str, int], int] = {}
    for i, (conv, turn) in enumerate(zip(conversations, turns)):
        if conv is None or turn is None:
            continue
        first = seen.setdefault((str(conv), int(turn)), i)
        if first != i:
            raise InputError(
                f"gives turn {turn} of conversation {str(conv)!r}, as query {query_ids[first]!r} does; "
                f"query {query_ids[i]!r} repeats it"[:240], path=path, line=None if lines is None else lines[i],
                field="turn", hint="number the turns of a conversation 1, 2, 3 … once each")
