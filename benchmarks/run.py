"""Measure `rankgate evaluate` against pytrec_eval and ranx, end to end, on the same files.

    python benchmarks/run.py                      # full run: 1k, 10k, 100k, msmarco (~15 min)
    python benchmarks/run.py --quick              # 1k and 10k only
    python benchmarks/run.py --sizes 100k --formats trec --repeat 5

Every measurement is one fresh process, timed from spawn to exit (start-up, imports, reading both
files, evaluating, writing results), with the peak resident memory of that process from `os.wait4`
(taken by spawn.py, a small launcher, so that the runner's own memory is not charged to the child).
Tools take turns inside each repetition so that a noisy neighbour slows them alike. The means each tool
reports are checked against each other (see report.py). Data comes from generate.py and is cached in
benchmarks/data/; the table goes to stdout and benchmarks/results/latest.md (raw numbers: latest.json).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate  # noqa: E402  (beside this file, found through sys.path above)
import report  # noqa: E402

METRICS = "ndcg@10,recall@100,precision@10,mrr@10,map@100,hit@10"
TOOLS = ("rankgate", "pytrec_eval", "ranx")
PEER_FORMATS = ("trec", "trec-shuffled")  # the peers read TREC files only
LARGE = ("100k", "msmarco", "300k", "1m")


@dataclass
class Run:
    wall: float
    rss: int  # bytes
    rc: int
    cpu: float = 0.0  # user + system seconds of the process (moves less than wall time on a busy machine)


@dataclass
class Case:
    size: str
    format: str
    tool: str
    rows: int
    runs: list[Run] = field(default_factory=list)
    means: dict | None = None
    error: str | None = None


def measure(cmd: list[str], env: dict, timeout: float) -> tuple[Run, str, str]:
    """Run `cmd` as a fresh process: wall time from fork to reaping, peak RSS of that process alone.

    spawn.py does the fork, exec and `os.wait4` from a small process of its own, so that the child's
    ru_maxrss is not inflated by this runner's memory (see spawn.py).
    """
    with tempfile.TemporaryDirectory(prefix="rankgate-bench-io-") as tmp:
        out, err = Path(tmp, "stdout"), Path(tmp, "stderr")
        launcher = [sys.executable, "-S", str(HERE / "spawn.py"), str(out), str(err), str(timeout)]
        p = subprocess.run(launcher + cmd, env=env, capture_output=True, text=True, check=False)
        if p.returncode != 0:
            raise RuntimeError(f"spawn.py failed: {p.stderr.strip()}")
        res = json.loads(p.stdout)
        text = [f.read_text(errors="replace") if f.exists() else "" for f in (out, err)]
        return Run(res["wall"], res["maxrss"], res["rc"], res.get("cpu", 0.0)), text[0], text[1]


def rankgate_exe() -> str:
    found = Path(sys.executable).with_name("rankgate")
    return str(found) if found.exists() else (shutil.which("rankgate") or "rankgate")


def rankgate_available() -> tuple[bool, str]:
    """Whether `rankgate evaluate` exists yet, and the last line it printed if it does not."""
    try:
        p = subprocess.run(
            [rankgate_exe(), "evaluate", "--help"], capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return False, str(e)
    lines = (p.stderr or p.stdout).strip().splitlines()
    return p.returncode == 0, lines[-1] if lines else f"exit {p.returncode}"


class Runner:
    def __init__(self, args: argparse.Namespace, numba_cache: Path):
        self.rankgate_args = args.rankgate_args.split()
        self.timeout = args.timeout
        self.env = dict(os.environ)
        self.numba_cache = numba_cache
        self.ranx_env = {**self.env, "NUMBA_CACHE_DIR": str(numba_cache)}

    def cache_files(self) -> int:
        return sum(len(files) for _, _, files in os.walk(self.numba_cache))

    def once(
        self, tool: str, gold: Path, run: Path, env: dict | None = None, warm_only: bool = True
    ) -> tuple[Run, dict | None, str]:
        """One timed process; returns the run, the means it reported (or None) and an error text.

        With `warm_only`, a ranx run that had to compile kernels missing from its kept cache is not
        counted: it is run again.
        """
        if tool == "rankgate":
            out_dir = Path(tempfile.mkdtemp(prefix="rankgate-bench-"))
            cmd = [
                rankgate_exe(),
                "evaluate",
                "--gold",
                str(gold),
                "--run",
                str(run),
                "--metrics",
                METRICS,
                "--out",
                str(out_dir),
                # trec_eval's rule in every format: the formats (and the peers) are checked to agree, and
                # a JSONL or Parquet file would otherwise keep its own order among tied scores
                "--ties",
                "id",
                *self.rankgate_args,
            ]
            try:
                r, stdout, stderr = measure(cmd, env or self.env, self.timeout)
                means, error = None, ""
                if r.rc == 0:
                    try:
                        means = json.loads((out_dir / "summary.json").read_text())["metrics"]
                    except (OSError, ValueError, KeyError) as e:
                        error = f"could not read summary.json: {e!r}"
            finally:
                shutil.rmtree(out_dir, ignore_errors=True)
        else:
            script = HERE / "peers" / ("pytrec_eval_trec.py" if tool == "pytrec_eval" else "ranx_trec.py")
            cmd = [sys.executable, str(script), str(gold), str(run)]
            kept_cache = tool == "ranx" and env is None and warm_only
            for _ in range(2):
                before = self.cache_files() if kept_cache else 0
                r, stdout, stderr = measure(
                    cmd, env or (self.ranx_env if tool == "ranx" else self.env), self.timeout
                )
                if not kept_cache or r.rc != 0 or self.cache_files() == before:
                    break
                # ranx compiled kernels its cache lacked (each new input type does): not a warm run, redo it
                log(
                    f"    (ranx compiled new kernels on {run.name}: {r.wall:.1f} s, not counted; running again)"
                )
            means, error = (json.loads(stdout)["metrics"] if r.rc == 0 else None), ""
        if r.rc != 0:
            error = f"exit {r.rc}: " + "\n".join(stderr.strip().splitlines()[-8:])
        return r, means, error


def warm_page_cache(*files: Path) -> None:
    """Read the inputs once so that no tool pays for the first read from disk."""
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(1 << 23):
                pass


def machine() -> dict:
    def proc_field(path: str, key: str) -> str:
        try:
            with open(path) as f:
                return next((line.split(":", 1)[1].strip() for line in f if line.startswith(key)), "")
        except OSError:
            return ""

    cpu = proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown"
    mem_kb = proc_field("/proc/meminfo", "MemTotal").split()  # "24684084 kB"
    mem = int(mem_kb[0]) * 1024 if mem_kb else 0
    versions = {}
    for dist in ("rankgate", "pytrec-eval-terrier", "ranx", "numba", "numpy", "pyarrow", "duckdb"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[dist] = "not installed"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        # cores this process (and the tools it starts) may run on: 1 under `taskset -c 0`
        "cores_allowed": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "memory_bytes": mem,
        "os": platform.platform(terse=True),
        "python": platform.python_version(),
        "versions": versions,
        "load_at_start": os.getloadavg(),
    }


def source_state() -> str:
    """The commit of the rankgate tree being measured, and whether it has uncommitted changes under src/."""
    try:
        head = subprocess.run(
            ["git", "-C", str(HERE.parent), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(HERE.parent), "status", "--porcelain", "--", "src"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + (" + uncommitted changes in src/" if dirty else "")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--sizes", default="1k,10k,100k,msmarco", help="comma list of " + ",".join(generate.SPECS))
    p.add_argument(
        "--formats",
        default="trec,trec-shuffled,jsonl,jsonl-logged,parquet",
        help="comma list of " + ",".join(generate.FORMATS) + " (peers run on the TREC ones only)",
    )
    p.add_argument("--tools", default=",".join(TOOLS), help="comma list of " + ",".join(TOOLS))
    p.add_argument(
        "--repeat", type=int, default=3, help="timed runs per tool and case; the median is reported"
    )
    p.add_argument(
        "--repeat-large",
        type=int,
        default=1,
        help="timed runs per tool on 100k and msmarco, except 100k TREC (the headline), which gets --repeat;\n"
        "one 10M-row run takes 10-70 s per tool, and the full run should stay near 15 minutes",
    )
    p.add_argument("--quick", action="store_true", help="1k and 10k only, no cold-cache ranx run")
    p.add_argument(
        "--skip-ranx-cold", action="store_true", help="do not measure ranx with an empty numba cache"
    )
    p.add_argument("--timeout", type=float, default=900, help="seconds before a process is killed")
    p.add_argument(
        "--rankgate-args",
        default="",
        help="extra options for rankgate evaluate, e.g. '--resamples 0' (no CIs: the peers compute none)",
    )
    p.add_argument("--data-dir", type=Path, default=HERE / "data")
    p.add_argument("--results", type=Path, default=HERE / "results" / "latest.md")
    args = p.parse_args(argv)
    if args.quick:
        args.sizes, args.skip_ranx_cold = "1k,10k", True
    args.sizes = [s for s in args.sizes.split(",") if s]
    args.formats = [f for f in args.formats.split(",") if f]
    args.tools = [t for t in args.tools.split(",") if t]
    for name, chosen, allowed in (
        ("size", args.sizes, generate.SPECS),
        ("format", args.formats, generate.FORMATS),
        ("tool", args.tools, TOOLS),
    ):
        bad = [c for c in chosen if c not in allowed]
        if bad:
            p.error(f"unknown {name} {', '.join(bad)}; choose from {', '.join(allowed)}")
    return args


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    info = {
        "command": " ".join(["python", "benchmarks/run.py", *(sys.argv[1:] if argv is None else argv)]),
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "machine": machine(),
        "metrics": METRICS,
        "repeat": args.repeat,
        "repeat_large": args.repeat_large,
        "notes": [],
        "rankgate_source": source_state(),
    }

    tools = list(args.tools)
    if "rankgate" in tools:
        ok, why = rankgate_available()
        if not ok:
            tools.remove("rankgate")
            info["notes"].append(f"rankgate not measured: `rankgate evaluate --help` failed ({why})")
            log(info["notes"][-1])

    smallest = min(args.sizes, key=lambda s: generate.SPECS[s].rows)
    control = len(tools) > 1 and any(t in tools for t in ("pytrec_eval", "ranx"))
    for size in args.sizes:
        extra = [generate.CONTROL] if control and size == smallest else []
        generate.ensure(args.data_dir, generate.SPECS[size], args.formats + extra, log=log)

    numba_cache = args.data_dir / "numba-cache"
    runner = Runner(args, numba_cache)
    cold = None
    peer_formats = [f for f in args.formats if f in PEER_FORMATS]
    if "ranx" in tools and peer_formats and not args.skip_ranx_cold:
        gold, run = generate.paths(args.data_dir, generate.SPECS[smallest], peer_formats[0])
        with tempfile.TemporaryDirectory(prefix="numba-cold-") as empty:
            log(f"ranx with an empty numba cache on {smallest} {peer_formats[0]} ...")
            r, _, err = runner.once("ranx", gold, run, env={**runner.env, "NUMBA_CACHE_DIR": empty})
            cold = {"size": smallest, "format": peer_formats[0], "wall": r.wall, "rss": r.rss, "error": err}
    # one untimed run of each tool first: byte-code caches, shared libraries, ranx's kept numba cache
    for tool in tools:
        fmts = args.formats if tool == "rankgate" else peer_formats
        if fmts:
            runner.once(
                tool, *generate.paths(args.data_dir, generate.SPECS[smallest], fmts[0]), warm_only=False
            )

    cases: list[Case] = []
    for size in args.sizes:
        spec = generate.SPECS[size]
        for fmt in args.formats:
            gold, run = generate.paths(args.data_dir, spec, fmt)
            warm_page_cache(gold, run)
            here = [Case(size, fmt, t, spec.rows) for t in tools if t == "rankgate" or fmt in PEER_FORMATS]
            repeats = (
                args.repeat if size not in LARGE or (size, fmt) == report.HEADLINE else args.repeat_large
            )
            for rep in range(max(args.repeat, args.repeat_large)):
                for i in range(len(here)):
                    case = here[(i + rep) % len(here)]  # take turns: nobody always runs first
                    if case.error or rep >= repeats:
                        continue
                    r, means, err = runner.once(case.tool, gold, run)
                    log(
                        f"{size:>8} {fmt:<14} {case.tool:<12} {r.wall:8.2f} s {r.rss / 2**20:8.0f} MB"
                        + (f"  FAILED {err.splitlines()[0] if err else ''}" if err else "")
                    )
                    if err:
                        case.error = err
                    else:
                        case.runs.append(r)
                        case.means = case.means or means
            cases.extend(here)

    controls: list[Case] = []  # untimed: the same run without tied scores, where every tool must agree
    if control:
        spec = generate.SPECS[smallest]
        gold, run = generate.paths(args.data_dir, spec, generate.CONTROL)
        for tool in tools:
            r, means, err = runner.once(tool, gold, run)
            controls.append(
                Case(smallest, generate.CONTROL, tool, spec.rows, [] if err else [r], means, err or None)
            )

    info["elapsed_s"] = time.perf_counter() - started
    info["machine"]["load_at_end"] = os.getloadavg()
    md = report.render(info, cases, cold, controls)
    print(md)
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(md)
    args.results.with_suffix(".json").write_text(
        json.dumps(
            {
                "info": info,
                "ranx_cold": cold,
                "cases": [asdict(c) for c in cases],
                "controls": [asdict(c) for c in controls],
            },
            indent=1,
        )
        + "\n"
    )
    log(f"wrote {args.results} ({info['elapsed_s'] / 60:.1f} min)")
    return 1 if report.mismatches(cases) or report.mismatches(controls) else 0


if __name__ == "__main__":
    sys.exit(main())
