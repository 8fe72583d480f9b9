"""The sections an evaluation can carry beside its metrics, declared once: one row per kind.

Each :class:`Section` row names the kind (``key``: its key in ``summary.json`` and in
:meth:`rankgate.flows.evaluate.Evaluation.sections`), its plain-data form, and one renderer per medium:
markdown (``rankgate evaluate --markdown``, ``compare --markdown``), a rich renderable (the terminal) and,
where the HTML report shows the section on its own, HTML. The outputs loop over the sections an
evaluation has, in the order of :data:`SECTIONS`: a new kind of section (a new experiment) is one row
here and its renderers, not an edit to each output of each command.

Run it to see the table: ``python -m rankgate.render.sections``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from rankgate.flows.evaluate import Evaluation

__all__ = ["HTML_EXPERIMENTS", "SECTION", "SECTIONS", "Section", "experiment_html", "sections_markdown",
           "sections_of", "sections_renderables", "summary_parts", "with_section"]


def _to_dict(part: Any) -> Any:
    return part.to_dict()


@dataclass(frozen=True)
class Section:
    """One kind of section: ``key``; ``title`` (the HTML report's heading and navigation link);
    ``to_dict(part)``, what ``summary.json`` holds under ``key``; ``markdown(part, confidence)``, a
    ``### …`` section ending in a newline; ``renderable(part, confidence)``, what the terminal prints;
    ``html(part, confidence)``, the report's ``<section>``, or None where the report draws the part in
    a place of its own (``html_elsewhere`` says where)."""

    key: str
    title: str
    markdown: Callable[[Any, float], str]
    renderable: Callable[[Any, float], Any]
    html: Callable[[Any, float], str] | None = None
    html_elsewhere: str = ""
    to_dict: Callable[[Any], Any] = _to_dict

    @property
    def anchor(self) -> str:
        """The id of its HTML section (and of the report's navigation link)."""
        return self.key.replace("_", "-")


# --- each kind's renderers: functions of the module that draws the part, looked up when called --------

def _call(module: str, name: str, confidence: bool = True) -> Callable[[Any, float], Any]:
    """``report.<module>.<name>(part, confidence)`` (``(part)`` where the part carries its own confidence)."""

    def call(part: Any, conf: float) -> Any:
        from rankgate.render import bounds, experiments, tables

        render = getattr({"bounds": bounds, "experiments": experiments, "tables": tables}[module], name)
        return render(part, conf) if confidence else render(part)

    return call


def _cost(name: str, confidence: bool = False) -> Callable[[Any, float], Any]:
    """A renderer of :mod:`rankgate.render.cost` (the cost summary carries its own confidence)."""

    def call(part: Any, conf: float) -> Any:
        from rankgate.render import cost

        render = getattr(cost, name)
        return render(part, conf) if confidence else render(part)

    return call


def _headed(heading: str, body: Callable[[Any, float], Any]) -> Callable[[Any, float], str]:
    """A markdown section: ``### heading`` over the table ``body`` writes."""
    return lambda part, conf: f"### {heading}\n\n" + body(part, conf)


def _experiment(key: str, title: str, markdown: str, renderable: str) -> Section:
    """A component experiment of :mod:`rankgate.render.experiments`: its markdown section (which carries
    its heading) is also the report's HTML section (:func:`~rankgate.render.experiments.section_html`)."""
    md = _call("experiments", markdown)

    def html(part: Any, confidence: float) -> str:
        from rankgate.render.experiments import section_html

        return section_html(md(part, confidence), key.replace("_", "-"))

    return Section(key, title, md, _call("experiments", renderable), html)


SECTIONS: tuple[Section, ...] = (
    Section("segments", "Segments", _headed("Segments", _call("tables", "segment_markdown", False)),
            _call("tables", "segment_table", False),
            html_elsewhere="report/html.py _segments: charts and the gate's marks beside each segment"),
    Section("sweep", "k-sweep", _headed("k-sweep", _call("tables", "sweep_markdown", False)),
            _call("tables", "sweep_table", False), html_elsewhere="report/html.py _sweep: the curves beside the panel"),
    _experiment("routing", "Routing", "routing_markdown", "routing_renderable"),
    _experiment("entity_linking", "Entity linking", "linking_markdown", "linking_renderable"),
    Section("latency", "Latency", _call("experiments", "latency_markdown", False),
            _call("experiments", "latency_renderable", False),
            html_elsewhere="report/html.py _panel: the latency table under the panel, beside the baseline's"),
    Section("resources", "Process resources", _call("experiments", "resources_markdown", False),
            _call("experiments", "resources_renderable", False), _call("experiments", "resources_html", False)),
    Section("cost", "Cost per query", _cost("cost_markdown"), _cost("cost_renderable"), _cost("cost_html", True)),
    _experiment("freshness", "Freshness", "freshness_markdown", "freshness_renderable"),
    _experiment("rewrite", "Query rewriting", "rewrite_markdown", "rewrite_renderable"),
    Section("bounds", "Incomplete gold set: bounds",
            _headed("Incomplete gold set: bounds", _call("bounds", "bounds_markdown")), _call("bounds", "bounds_table"),
            _call("bounds", "bounds_section")),
)
"""Every kind of section, in the order the terminal, markdown and JSON outputs show them."""

SECTION: Mapping[str, Section] = {s.key: s for s in SECTIONS}

HTML_EXPERIMENTS: tuple[str, ...] = ("cost", "resources", "freshness", "rewrite", "routing", "entity_linking")
"""The kinds the HTML report shows as experiment sections (after the lists), in page order; ``bounds``
is drawn with the answer layer's numbers (:func:`rankgate.render.html.layer_two_section`)."""


def sections_of(parts: Mapping[str, Any]) -> Iterator[tuple[Section, Any]]:
    """(row, part) of each part in ``parts`` (kind -> computed part, None: not computed), in table order.
    A kind without a row is an error of the program, not of the input."""
    unknown = set(parts) - set(SECTION)
    if unknown:
        raise KeyError(f"no section kind declared for {sorted(unknown)} (rankgate.render.sections.SECTIONS)")
    for row in SECTIONS:
        part = parts.get(row.key)
        if part is not None:
            yield row, part


def summary_parts(ev: Evaluation, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """What ``summary.json`` holds beside the metrics: the statistics, then each section's plain data
    (except the kinds in ``skip``: written another way, as :func:`rankgate.render.exports.segments_json` does)."""
    out: dict[str, Any] = {"statistics": ev.request.statistics.to_dict()}
    from rankgate.stats.clusters import resampling

    units = resampling(ev.result)
    if units is not None:  # conversations were resampled (stats/clusters.py)
        out["statistics"]["resampling"] = units.to_dict()
    for row, part in sections_of(ev.sections()):
        if row.key not in skip:
            out[row.key] = row.to_dict(part)
    return out


def sections_markdown(ev: Evaluation) -> list[str]:
    """Each section of ``ev`` as markdown, in table order."""
    return [row.markdown(part, ev.confidence) for row, part in sections_of(ev.sections())]


def sections_renderables(ev: Evaluation) -> list[Any]:
    """Each section of ``ev`` as a rich renderable, in table order."""
    return [row.renderable(part, ev.confidence) for row, part in sections_of(ev.sections())]


def experiment_html(parts: Mapping[str, Any], confidence: float) -> tuple[tuple[str, str, str], ...]:
    """The HTML report's experiment sections of ``parts`` (kind -> part), as (anchor, title, HTML)."""
    out = []
    for key in HTML_EXPERIMENTS:
        row, part = SECTION[key], parts.get(key)
        if part is not None and row.html is not None:
            out.append((row.anchor, row.title, row.html(part, confidence)))
    return tuple(out)


def with_section(as_dict: Any, as_markdown: Any, as_renderable: Any, key: str, part: Any,
                 confidence: float) -> tuple[Any, Any, Any]:
    """Wrap a result's three renderers (its dict, markdown and terminal forms) so each also shows the
    section ``part`` of kind ``key`` after it (``rankgate compare --rewrite``)."""
    row = SECTION[key]

    def to_dict(value: Any) -> dict[str, Any]:
        return {**as_dict(value), key: row.to_dict(part)}

    def to_markdown(value: Any) -> str:
        return as_markdown(value) + "\n" + row.markdown(part, confidence)

    def to_renderable(value: Any) -> Any:
        from rich.console import Group
        from rich.text import Text

        return Group(as_renderable(value), Text(""), row.renderable(part, confidence))

    return to_dict, to_markdown, to_renderable


if __name__ == "__main__":  # pragma: no cover
    for s in SECTIONS:
        where = "own section" if s.html is not None else f"elsewhere: {s.html_elsewhere}"
        print(f"{s.key:<16} {s.title:<30} html: {where}")
