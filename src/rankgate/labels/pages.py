"""The labelling app's HTML, rendered on the server: every outside text escaped (:func:`html.escape`, the one HTML
escaping function of rankgate's pages), query terms marked in the texts, no inline script or style (the page's
Content-Security-Policy allows only ``/static/app.js`` and ``/static/app.css`` of the app itself).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from rankgate.labels.scales import Scale
from rankgate.labels.store import Card, Progress

__all__ = ["BrowseItem", "BrowseQuery", "BrowseView", "card_fragment", "marked", "page", "render_guide"]

#: Longest text shown on a card (a longer one is cut, saying how much was left out).
SHOWN_CHARS = 20_000
_STOP = frozenset("a an and are as at be by can do does for from has have how i in is it its me my of on or our "
                  "that the this to was we what when where which who why will with you your".split())
_WORD = re.compile(r"\w+", re.UNICODE)


def terms_of(query: str) -> list[str]:
    """The words of ``query`` worth marking: two characters or more, not a stop word, each once."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(query.lower()):
        if (len(w) >= 2 or w.isdigit()) and w not in _STOP:
            seen.setdefault(w, None)
    return list(seen)[:40]


def marked(text: str, terms: Sequence[str], *, limit: int = SHOWN_CHARS) -> str:
    """``text`` as HTML: escaped, each whole-word occurrence of a term in ``<mark>``, cut at ``limit`` characters."""
    cut = ""
    if len(text) > limit:
        cut = f' <span class="cut">… ({len(text) - limit:,} more characters)</span>'
        text = text[:limit]
    if not terms:
        return escape(text) + cut
    pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True)) + r")\b",
                         re.IGNORECASE | re.UNICODE)
    out, at = [], 0
    for m in pattern.finditer(text):
        out.append(escape(text[at:m.start()]))
        out.append(f"<mark>{escape(m.group(0))}</mark>")
        at = m.end()
    out.append(escape(text[at:]))
    return "".join(out) + cut


def render_guide(markdown: str) -> str:
    """A guideline file's markdown as HTML: headings, lists, paragraphs, ``**bold**``, ``*em*`` and ``code``; every
    character escaped first, so the file can hold no markup of its own."""
    html: list[str] = []
    para: list[str] = []
    in_list = False

    def inline(s: str) -> str:
        s = escape(s)
        s = re.sub(r"`([^`]+)`", r"<code>\1</code>", s)
        s = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", s)
        return re.sub(r"(?<![*\w])\*([^*]+)\*(?!\*)", r"<em>\1</em>", s)

    def close() -> None:
        nonlocal in_list
        if para:
            html.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()
        if in_list:
            html.append("</ul>")
            in_list = False

    for raw in markdown.splitlines():
        line = raw.rstrip()
        heading = re.match(r"^(#{1,6})\s+(.*)$", line)
        item = re.match(r"^\s*[-*]\s+(.*)$", line)
        if not line.strip():
            close()
        elif heading:
            close()
            level = min(len(heading.group(1)) + 2, 6)
            html.append(f"<h{level}>{inline(heading.group(2))}</h{level}>")
        elif item:
            if para:
                html.append(f"<p>{inline(' '.join(para))}</p>")
                para.clear()
            if not in_list:
                html.append("<ul>")
                in_list = True
            html.append(f"<li>{inline(item.group(1))}</li>")
        else:
            para.append(line.strip())
    close()
    return "\n".join(html)


def page(title: str, body: str, *, token: str, annotator: str | None, mode: str, guide: str = "",
         nav: str = "") -> str:
    """A whole page: the token for the script's writes in a meta tag (never in a URL), the app's own script and
    stylesheet, nothing from outside."""
    who = (f'<span class="who">labelling as <strong>{escape(annotator)}</strong></span>' if annotator else "")
    aside = f'<aside id="guide"><h2>Guidelines</h2>{guide}</aside>' if guide else ""
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="rg-token" content="{escape(token)}">
<meta name="rg-mode" content="{escape(mode)}">
<title>{escape(title)}</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script>
</head><body>
<header class="top"><span class="brand">rankgate label</span>{nav}{who}
<span class="keys">keys: <kbd>?</kbd> help</span></header>
<div class="layout"><main id="main">{body}</main>{aside}</div>
<div id="status" role="status" aria-live="polite"></div>
<div id="help" hidden><h2>Keys</h2><dl>
<dt>0–3</dt><dd>grade the card (or the focused item in the browse view)</dd>
<dt>s</dt><dd>skip: pass this card to someone else</dd><dt>u</dt><dd>undo your last label</dd>
<dt>n</dt><dd>write a note; it goes with your next grade</dd><dt>j / k</dt><dd>browse view: next / previous item</dd>
<dt>?</dt><dd>show or hide this help</dd><dt>Esc</dt><dd>leave the note field</dd></dl></div>
</body></html>"""


def progress_html(p: Progress, annotator: str | None) -> str:
    from rankgate.metrics.display import fmt_count, fmt_share

    def bar(label: str, done: int, total: int, cls: str = "") -> str:
        share = done / total if total else 0.0
        return (f'<div class="bar {cls}" data-done="{done}" data-total="{total}"><span class="label">{escape(label)}'
                f'</span><progress value="{done}" max="{max(total, 1)}"></progress>'
                f'<span class="count">{fmt_count(done)} / {fmt_count(total)} ({fmt_share(share, 0)})</span></div>')

    parts = [bar("all items", p.done, p.total, "overall")]
    if annotator:
        parts.append(f'<div class="mine">you: <strong class="mine-count">{fmt_count(p.mine)}</strong> labels</div>')
    if len(p.strata) > 1:
        parts += [bar(s or "(none)", d, t, "stratum") for s, d, t in p.strata[:12]]
        if len(p.strata) > 12:
            parts.append(f'<div class="more">and {fmt_count(len(p.strata) - 12)} more strata</div>')
    return f'<section id="progress">{"".join(parts)}</section>'


def _buttons(scale: Scale, name: str = "grade", skip_label: str | None = None) -> str:
    out = [f'<button type="button" class="grade" data-{name}="{g}"><kbd>{g}</kbd> {escape(word)}</button>'
           for g, word in scale.grades]
    return "".join(out)


def _meta_line(item_payload: Mapping[str, Any], source: str, stratum: str) -> str:
    bits = []
    if item_payload.get("segment"):
        bits.append(f'<span class="segment">{escape(str(item_payload["segment"]))}</span>')
    bits.append(f'<span class="source">{escape(source.replace("_", " "))}</span>')
    if stratum:
        bits.append(f'<span class="stratum">stratum {escape(stratum)}</span>')
    if item_payload.get("why"):
        bits.append(f'<span class="why">{escape(str(item_payload["why"]))}</span>')
    return " · ".join(bits)


def card_fragment(card: Card | None, scale: Scale, progress: Progress, annotator: str | None) -> str:
    """The card area: progress, then the card (or the end), then the note field."""
    head = progress_html(progress, annotator)
    if not annotator:
        return head + ('<section class="who-form"><h2>Who is labelling?</h2><form id="name-form">'
                       '<label>Your name <input id="annotator" name="annotator" maxlength="64" required '
                       'autocomplete="off"></label> <button type="submit">Start</button></form>'
                       "<p>Labels are kept under this name; come back with the same name to resume.</p></section>")
    if card is None:
        return head + ('<section class="done"><h2>Nothing left for you to label</h2>'
                       "<p>Every item has the labels it needs, or you labelled or skipped the rest. "
                       "<kbd>u</kbd> undoes your last label. Export with <code>rankgate label export</code>.</p></section>")
    p = card.item.payload
    terms = terms_of(str(p.get("query") or ""))
    overlap = '<span class="overlap">shared with another annotator</span>' if card.overlap else ""
    query = f'<h2 class="query">{marked(str(p.get("query") or ""), [])}</h2>'
    meta = f'<div class="meta">query <code>{escape(card.item.query_id)}</code>'
    if card.item.kind == "relevance":
        meta += f' · item <code>{escape(card.item.item_id)}</code>'
    meta += f" · {_meta_line(p, card.item.source, card.item.stratum)} {overlap}</div>"
    if card.item.kind == "relevance":
        text = p.get("text")
        body = (f'<div class="text">{marked(str(text), terms)}</div>' if isinstance(text, str) else
                '<div class="text missing">no text was logged for this item (gold sample without --corpus)</div>')
        choose = f'<div class="grades" data-scale="{escape(scale.name)}">{_buttons(scale)}</div>'
    else:
        contexts = "".join(f"<li>{marked(str(c), terms)}</li>" for c in p.get("contexts") or [])
        ref = p.get("reference")
        body = (f'<div class="answer"><h3>Answer</h3><div class="text">{marked(str(p.get("answer") or ""), terms)}</div>'
                f'</div><details class="contexts" open><summary>Context ({len(p.get("contexts") or [])})</summary>'
                f"<ol>{contexts}</ol></details>")
        if ref:
            body += f'<div class="reference"><h3>Reference</h3><div class="text">{escape(str(ref))}</div></div>'
        choose = ('<div class="verdicts"><div class="verdict" data-verdict="faithful"><span>Faithful to its context?'
                  '</span><button type="button" data-v="1"><kbd>1</kbd> yes</button><button type="button" data-v="0">'
                  '<kbd>0</kbd> no</button><button type="button" data-v="2"><kbd>2</kbd> no statement</button></div>')
        if ref:
            choose += ('<div class="verdict" data-verdict="correct"><span>Agrees with the reference?</span>'
                       '<button type="button" data-v="1"><kbd>1</kbd> yes</button><button type="button" data-v="0">'
                       '<kbd>0</kbd> no</button></div>')
        choose += "</div>"
    note = ('<div class="note"><label>Note <kbd>n</kbd> <textarea id="note" rows="2" maxlength="2000">'
            "</textarea></label></div>")
    actions = ('<div class="actions"><button type="button" id="skip"><kbd>s</kbd> skip</button>'
               '<button type="button" id="undo"><kbd>u</kbd> undo</button></div>')
    return (f'{head}<article class="card" data-pos="{card.pos}" data-kind="{escape(card.item.kind)}">'
            f"{query}{meta}{body}{choose}{note}{actions}</article>")


# -- the browse view -----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BrowseItem:
    id: str
    text: str | None
    ranks: tuple[int | None, ...]        # its rank in each run (None: not in that run's ranking)
    gold: int | None                     # its grade in the gold set; None: unjudged


@dataclass(frozen=True)
class BrowseQuery:
    query_id: str
    query: str
    segment: str
    values: tuple[float | None, ...]     # the metric per run
    failing: bool                        # the last run finds nothing relevant in its top k
    moved: float                         # last run's value less the first's
    tops: tuple[tuple[BrowseItem, ...], ...]  # each run's top k


@dataclass(frozen=True)
class BrowseView:
    runs: tuple[str, ...]
    metric: str
    depth: int
    queries: tuple[BrowseQuery, ...]
    by: str | None

    def find(self, query_id: str) -> BrowseQuery | None:
        return next((q for q in self.queries if q.query_id == query_id), None)


def browse_list(view: BrowseView, *, failing: bool, moved: bool, segment: str, search: str) -> str:
    """The query list with its filters (a GET form: the filters are in the address, so a view can be shared)."""
    from rankgate.metrics.display import fmt_count, fmt_delta, fmt_value

    shown = [q for q in view.queries if (not failing or q.failing) and (not segment or q.segment == segment)
             and (not search or search.lower() in (q.query + " " + q.query_id).lower())]
    if moved:
        shown.sort(key=lambda q: (-abs(q.moved), q.query_id))
    segments = sorted({q.segment for q in view.queries if q.segment})
    options = "".join(f'<option value="{escape(s)}"{" selected" if s == segment else ""}>{escape(s)}</option>'
                      for s in segments)
    last = view.runs[-1]
    form = (f'<form class="filters" method="get" action="/browse"><label><input type="checkbox" name="failing" '
            f'value="1"{" checked" if failing else ""}> failing in {escape(last)}</label> '
            f'<label><input type="checkbox" name="moved" value="1"{" checked" if moved else ""}> moved most first'
            f'</label> <label>segment <select name="segment"><option value="">all</option>{options}</select></label> '
            f'<label>search <input type="search" name="q" value="{escape(search)}"></label> '
            '<button type="submit">Show</button></form>')
    head = "".join(f"<th>{escape(r)}</th>" for r in view.runs)
    rows = []
    for q in shown:
        vals = "".join(f'<td class="num">{fmt_value(view.metric, v)}</td>' for v in q.values)
        link = f'/browse/query?id={_url(q.query_id)}'
        rows.append(f'<tr class="{"failing" if q.failing else ""}" data-query-id="{escape(q.query_id)}">'
                    f'<td><a href="{escape(link)}">{escape(q.query_id)}</a></td><td>{escape(q.query)}</td>'
                    f'<td>{escape(q.segment)}</td>{vals}<td class="num">{fmt_delta(view.metric, q.moved)}</td></tr>')
    table = (f'<table class="queries"><thead><tr><th>query</th><th>text</th><th>segment</th>{head}'
             f"<th>change</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    count = f'<p class="count">{fmt_count(len(shown))} of {fmt_count(len(view.queries))} queries · {escape(view.metric)}</p>'
    return f"<h1>Queries</h1>{form}{count}{table}"


def _url(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def browse_query(view: BrowseView, q: BrowseQuery, scale: Scale, mine: Mapping[tuple[str, str], int]) -> str:
    """One query: each run's top k side by side, every item with its rank in each run, its gold grade or
    "unjudged", your label, its text, and the grade buttons."""
    from rankgate.metrics.display import fmt_rank, fmt_value

    terms = terms_of(q.query)
    cols = []
    for ri, (name, top) in enumerate(zip(view.runs, q.tops)):
        items = []
        for it in top:
            ranks = " ".join(f'<span class="rank" title="rank in {escape(r)}">{escape(r)}: {fmt_rank(rank)}</span>'
                             for r, rank in zip(view.runs, it.ranks))
            gold = "unjudged" if it.gold is None else f"gold {it.gold}"
            label = mine.get((q.query_id, it.id))
            yours = f'<span class="mine">your label {label}</span>' if label is not None else ""
            text = (marked(it.text, terms, limit=4000) if it.text is not None else
                    '<span class="missing">no text logged</span>')
            buttons = "".join(f'<button type="button" class="grade" data-grade="{g}">{g}</button>' for g, _ in scale.grades)
            items.append(f'<li class="item {"unjudged" if it.gold is None else "judged"}" tabindex="0" '
                         f'data-query-id="{escape(q.query_id)}" data-id="{escape(it.id)}" data-run="{ri}">'
                         f'<div class="head"><code>{escape(it.id)}</code> <span class="gold">{gold}</span> {yours}</div>'
                         f'<div class="ranks">{ranks}</div><div class="text">{text}</div>'
                         f'<div class="grades">{buttons}</div></li>')
        value = fmt_value(view.metric, q.values[ri])
        cols.append(f'<section class="run" data-run="{escape(name)}"><h2>{escape(name)} <span class="value">'
                    f'{escape(view.metric)} {value}</span></h2><ol>{"".join(items)}</ol></section>')
    head = (f'<p><a href="/browse">← all queries</a></p><h1 class="query">{escape(q.query)}</h1>'
            f'<div class="meta">query <code>{escape(q.query_id)}</code>'
            + (f" · {escape(q.segment)}" if q.segment else "") + "</div>")
    return f'{head}<div class="side-by-side" data-query-id="{escape(q.query_id)}">{"".join(cols)}</div>'
