"""Turn a production incident into a regression case of the gold set (see :mod:`rankgate.goldset.incident`).

:func:`run_incident_new` reads one request's trace and names the incident; the command renders the
postmortem template from it. :func:`run_incident_add` checks a filled postmortem and appends its
regression case to the gold file named in the request, atomically: the file is the old one or the
old one plus the new line, never anything in between.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from rankgate.flows._inputs import FilePath, paths


def _existing(gold_path: str) -> tuple[Any, set[str], set[str]]:
    from rankgate.goldset import read_gold_file

    gold = read_gold_file(gold_path)
    problem = gold.first_problem()
    if problem is not None:
        raise problem
    ids = {q.query_id for q in gold.queries}
    incidents = {str(q.fields["incident_id"]) for q in gold.queries if q.fields.get("incident_id") is not None}
    return gold, ids, incidents


@dataclass(frozen=True, slots=True)
class IncidentNewRequest:
    trace: str                          # one request as JSON, or any trace export rankgate reads
    request_id: str | None = None       # the request to take from a file of several
    gold: str | None = None             # refuses an incident id the gold set already holds
    id: str | None = None               # default: inc-<request_id>
    date: str | None = None             # YYYY-MM-DD; default: the trace's, else today (UTC)

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the trace and the gold set."""
        return paths(self.trace, self.gold)

    def __post_init__(self) -> None:
        from rankgate._util.constraints import FILE, TEXT, check_fields
        from rankgate.errors import F, UsageError

        check_fields(self, "IncidentNewRequest", request_id=TEXT, gold=FILE, id=TEXT, date=TEXT)
        if self.date is not None:
            try:
                dt.date.fromisoformat(self.date)
            except ValueError:
                raise UsageError(f"{F.date} must be YYYY-MM-DD; got {self.date!r}") from None


@dataclass(frozen=True, slots=True)
class NewIncident:
    trace: Any                          # the request's trace
    incident_id: str
    date: str                           # YYYY-MM-DD


def run_incident_new(req: IncidentNewRequest) -> NewIncident:
    from rankgate.errors import F, UsageError
    from rankgate.goldset.incident import read_trace

    trace = read_trace(req.trace, req.request_id)
    incident_id = req.id or f"inc-{trace.request_id}"
    date = req.date or (trace.fields.get("timestamp") or "")[:10]
    try:
        date = dt.date.fromisoformat(date).isoformat()
    except ValueError:
        date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    if req.gold:
        _, ids, incidents = _existing(req.gold)
        if incident_id in ids or incident_id in incidents:
            raise UsageError(f"{req.gold} already holds incident {incident_id!r}; give {F.id} another id")
    return NewIncident(trace, incident_id, date)


@dataclass(frozen=True, slots=True)
class IncidentAddRequest:
    postmortem: str                     # the filled postmortem (markdown)
    gold: str                           # the JSONL gold set to append to
    corpus: str | None = None           # manifest: the case's chunk ids must be in it

    def inputs(self) -> tuple[FilePath, ...]:
        """The files the request reads (an output may be none of them): the postmortem, the gold set (which
        :func:`run_incident_add` appends to) and the corpus manifest."""
        return paths(self.postmortem, self.gold, self.corpus)


@dataclass(frozen=True, slots=True)
class AddedIncident:
    incident_id: str
    query_id: str
    failure_link: str
    lifecycle_stage: str


def run_incident_add(req: IncidentAddRequest) -> AddedIncident:
    import json

    from rankgate._util.atomic import write_bytes
    from rankgate.io.jsonl import parse_gold_records
    from rankgate.io.source import check_file, sha256_file, text_lines
    from rankgate.errors import InputError, UsageError
    from rankgate.goldset.incident import parse_postmortem, pm_value, regression_case

    check_file(req.postmortem, "postmortem")
    text = "".join(line for _, line in text_lines(req.postmortem))
    pm, problems = parse_postmortem(text, req.postmortem)
    if pm is None:
        first = problems[0]
        more = len(problems) - 1
        if more:
            first = InputError(first.detail, path=first.path, line=first.line, field=first.field,
                               hint=(first.hint + "; " if first.hint else "") + f"{more} more unfilled or invalid")
        raise first
    if str(req.gold).endswith((".parquet", ".pq")):
        raise UsageError(f"{req.gold}: incident add appends to a JSONL gold set")
    gold, ids, incidents = _existing(req.gold)
    digest = gold.sha256
    if pm.incident_id in incidents or pm.incident_id in ids:
        raise InputError(f"already holds incident {pm.incident_id!r}", path=req.gold, field="incident_id",
                         hint="each incident is added once; give the postmortem another incident_id for a new case")
    record = regression_case(pm)
    chunks = [c for c, _, _ in pm.relevant] + list(pm.must_not_retrieve)
    if req.corpus:
        from rankgate.corpus import load_manifest

        corpus = load_manifest(req.corpus)
        absent = [c for c in chunks if c not in corpus]
        if absent:
            shown = ", ".join(pm_value(c, item=True) for c in absent[:5])  # one line, whatever the ids hold
            raise InputError(f"names chunks that are not in the corpus: {shown}", path=req.postmortem,
                             field="regression test", hint=f"check the ids against {req.corpus}")
    lines = sum(1 for _ in text_lines(req.gold))
    parse_gold_records([(lines + 1, record)], req.postmortem)  # the case is a valid gold line
    with open(req.gold, "rb") as fh:
        data = fh.read()
    if sha256_file(req.gold) != digest:
        raise InputError("changed while the case was prepared", path=req.gold, hint="run incident add again")
    if data and not data.endswith(b"\n"):
        data += b"\n"
    line = json.dumps(record, ensure_ascii=False) + "\n"
    write_bytes(req.gold, data + line.encode("utf-8"))
    return AddedIncident(str(pm.incident_id), str(record["query_id"]), str(pm.failure_link), str(pm.lifecycle_stage))
