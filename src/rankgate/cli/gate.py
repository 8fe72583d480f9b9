"""``rankgate gate``: check ship criteria; exit 0 (all blocking gates pass), 1 (one failed), 2 (bad input
or an output that cannot be written), 3 (an internal error: never a verdict).

Writes the PR comment (``--comment``) and the machine-readable outcome (``--json-out``) atomically (``--json``
prints the outcome on stdout instead of the table), and appends the comment to ``$GITHUB_STEP_SUMMARY`` when
that is set (GitHub Actions' job summary).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from rankgate.cli._outcome import print_outcome as _print
from rankgate.cli.options import TIES_HELP, Misnamed, add_columns, add_field, add_formats, add_gold, add_json, add_ties
from rankgate.cli.outputs import Output

HELP = "check ship criteria (YAML) on a candidate run, optionally against a baseline; exit 1 if a blocking gate fails"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("gate", help=HELP, description=HELP + ". Exit codes: 0 pass, 1 a blocking gate failed, 2 usage, input or output error, 3 internal error.")
    p.add_argument("--config", required=True, metavar="YAML", help="ship criteria: gates with thresholds and regression limits (see docs/gating.md)")
    add_gold(p)
    p.add_argument("--candidate", required=True, metavar="RUN", help="the run being proposed")
    p.add_argument("--baseline", metavar="RUN|SUMMARY",
                   help="a baseline run (paired comparison) or a summary.json of one (means only)")
    add_formats(p)
    add_columns(p)
    add_field(p)
    add_ties(p, TIES_HELP + "; overrides the ship criteria's evaluate.ties")
    p.add_argument("--queries", metavar="PATH",
                   help="a queries file (BEIR queries.jsonl, id<TAB>text, TREC topics): query texts shown beside ids when the gold set has none")
    p.add_argument("--corpus", metavar="PATH",
                   help="corpus manifest (JSONL, Parquet or a folder): checks max_stale_labels of the ship criteria "
                        "(without it that limit is reported as not checked)")
    p.add_argument("--comment", metavar="PATH", help="write the PR comment (markdown) to PATH")
    add_json(p, "print the outcome as JSON on stdout instead of the table",
             out_help="write the outcome as JSON to PATH (usable later as --baseline)")
    p.add_argument("--candidate-label", metavar="TEXT", help="how the comment names the candidate (default: file name)")
    p.add_argument("--baseline-label", metavar="TEXT", help="how the comment names the baseline (default: file name)")
    p.add_argument("--no-step-summary", action="store_true", help="do not append to $GITHUB_STEP_SUMMARY even when set")
    p.add_argument("--post-comment", action="store_true",
                   help="post or update one sticky comment on the pull request (GitHub Actions: token from "
                        "$GITHUB_TOKEN, pull request from the event); a failure to post is a warning, never an error")
    p.add_argument("--max-reply-bytes", type=int, default=None, metavar="N",
                   help="with --post-comment: largest GitHub API reply read (default 1000000); a larger one is a "
                        "warning and nothing is posted")
    p.add_argument("--run", action=Misnamed,
                   say="gate takes the proposed run as --candidate RUN (and the run or summary.json it is "
                       "compared with as --baseline)")


#: What the command writes (:mod:`rankgate.cli.outputs`), both files or neither. --json-out may replace the
#: --baseline summary it read: rolling a baseline forward is fine.
OUTPUTS = {"comment": Output("--comment"), "json_out": Output("--json-out", replaces=("baseline",))}


def request(args: argparse.Namespace) -> Any:
    """The gate run the options ask for (the ship criteria as a path: the flow reads them first)."""
    from rankgate.flows.gate import GateRequest

    given = {"gold_format": args.gold_format, "run_format": args.run_format, "ties": args.ties}
    overrides: dict[str, Any] = {name: value for name, value in given.items() if value}
    if args.columns:
        from rankgate.io.formats import parse_columns

        overrides["columns"] = parse_columns(args.columns)
    if args.field:
        from rankgate.cli.options import record_fields

        overrides["fields"] = record_fields(args, "gate")
    return GateRequest(args.config, args.gold, args.candidate, args.baseline,
                       baseline_label=args.baseline_label, candidate_label=args.candidate_label, queries=args.queries,
                       corpus=args.corpus, evaluate=overrides)


def run(args: argparse.Namespace) -> int:
    from rankgate.cli.outputs import check_outputs

    reply_cap = _reply_cap(args.max_reply_bytes)
    req = request(args)
    planned = check_outputs(args, OUTPUTS, req)
    # The gate flow's Python entry (rankgate.gate), looked up when the command runs: what stands in for it
    # there stands in for the command's too.
    from rankgate.flows import gate as flow

    outcome = flow.gate(req.config, req.gold, req.candidate, req.baseline, baseline_label=req.baseline_label,
                         candidate_label=req.candidate_label, queries=req.queries, corpus=req.corpus, **req.evaluate)
    for note in outcome.notes:
        if "no retrieved id matches" in note:  # every score is 0: say why before the verdict
            print(f"rankgate gate: warning: {note}", file=sys.stderr)
    from rankgate.render.comment import comment_markdown

    markdown = comment_markdown(outcome)
    data = outcome.to_json() if args.json or args.json_out else ""  # (49 MB for a gate on a field of 50,000 segments: only if asked)
    from rankgate.gating.alike import pair_warnings

    # the baseline scored on another gold version, or ranked by another rule: compare's sentences
    for _, line in pair_warnings(outcome.candidate_label, outcome.baseline_label, outcome.gold_versions,
                                 outcome.tie_rules):
        print(f"rankgate gate: warning: {line}", file=sys.stderr)

    files = {path: text for path, text in ((args.comment, markdown), (args.json_out, data)) if path}
    if files:
        planned.write(files)  # both or neither
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path and not args.no_step_summary:
        _append_step_summary(summary_path, markdown)
    try:
        if args.json:
            sys.stdout.write(data)
        else:
            _print(outcome)
    except BrokenPipeError:  # e.g. piped into `head`: the verdict still decides the exit code
        pass
    if args.post_comment:
        from rankgate.render.github import upsert_comment, workflow_command

        # never raises: a failed post is a notice or warning
        line = workflow_command(upsert_comment(markdown, max_reply_bytes=reply_cap))
        try:  # (with --json, stdout holds the JSON alone; the runner reads workflow commands on stderr too)
            print(line, flush=True, file=sys.stderr if args.json else sys.stdout)
        except BrokenPipeError:
            pass
    return outcome.exit_code


def _reply_cap(value: int | None) -> int:
    from rankgate.render.github import MAX_REPLY_BYTES

    if value is None:
        return MAX_REPLY_BYTES
    if not 1024 <= value <= 1 << 30:
        from rankgate.errors import UsageError

        raise UsageError(f"--max-reply-bytes must be a whole number of bytes from 1024 to {1 << 30:,} "
                         f"(default {MAX_REPLY_BYTES:,}); got {value}")
    return value


def _append_step_summary(path: str, markdown: str) -> None:
    """Append the comment to GitHub's job summary; a failure is a warning, never the verdict."""
    try:
        with open(path, "a", encoding="utf-8") as fh:  # the runner collects appended sections
            fh.write(markdown + "\n")
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        print(f"rankgate gate: warning: could not append to GITHUB_STEP_SUMMARY {path} ({reason}); "
              "the verdict and exit code are unchanged", file=sys.stderr)
