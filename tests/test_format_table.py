"""The gold/run format table (rankgate.io.formats) and its one detection (rankgate.io.detect).

Differential: every file under tests/data and a set of generated edge cases (gzip, byte-order mark, no
extension, pipes' copies, folders, empty files) get the same format, or the same refusal, from the table
as from the if/elif detection it replaced, which is kept below as it was. Then the plug-in group
``rankgate.formats``: a third-party row is found through an entry point, sniffed ahead of the built-in
rows, read, listed in the refusal of an unknown format, and a broken plug-in is named.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import textwrap
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rankgate._util import plugins
from rankgate.io import GOLD_FORMATS, RUN_FORMATS, load_gold, load_run
from rankgate.io.detect import detect
from rankgate.io.formats import FORMATS, formats_for
from rankgate.errors import InputError, UsageError

DATA = Path(__file__).parent / "data"


# --- the detection the table replaced, as it was (data/load.py: _detect, then tools.refine) -----------

def _old_detect(path: str, what: str) -> str:
    from rankgate.io.source import PARQUET_MAGIC, first_byte, magic

    p = path.removesuffix(".gz")
    ext = os.path.splitext(p)[1].lower()
    if os.path.isdir(path):
        from rankgate.io.trec import has_beir_qrels

        if what == "gold" and has_beir_qrels(path):
            return "beir"
        raise InputError("is a folder", path=path, hint=f"pass the {what} file itself")
    if ext in (".parquet", ".pq") or magic(path) == PARQUET_MAGIC:
        return "parquet"
    if ext in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if ext == ".tsv" and what == "gold":
        return "beir"
    if ext in (".yaml", ".yml"):
        return "samples"
    first = first_byte(path)
    if first in (b"{", b"["):
        return "jsonl"
    if not first:
        raise InputError("is empty", path=path, hint=f"the {what} file has no content")
    return "trec"


def _old_refine(path: str, fmt: str, what: str) -> str:
    from rankgate.io.tools.contract import is_contract_json
    from rankgate.io.tools.records import is_hf_folder
    from rankgate.io.tools.read import BEIR_HEADER, TABLE_WORDS, first_line, json_shape, table_shape

    tool_shapes = ("ragas", "deepeval", "llamaindex")
    if os.path.isdir(path):
        return "hf" if is_hf_folder(path) else fmt
    ext = os.path.splitext(path.removesuffix(".gz"))[1].lower()
    if ext == ".csv":
        return "csv"
    if ext == ".tsv" or fmt == "trec":
        first = first_line(path).rstrip("\r\n")
        names = [n.strip().lower() for n in first.split("\t" if "\t" in first or ext == ".tsv" else ",")]
        beir = what == "gold" and tuple(names[:3]) == BEIR_HEADER
        if not beir and TABLE_WORDS & set(names):
            return "csv"
        return fmt
    if fmt == "jsonl":
        shape = json_shape(path)
        if shape in tool_shapes:
            return shape
        if shape == "llamaindex_results":  # (RetrieverEvaluator results, read since issue 34 by the llamaindex row)
            return "llamaindex"
        return "samples" if is_contract_json(path, what) else fmt
    if fmt == "parquet":
        shape = table_shape(path)
        return shape if shape in tool_shapes else fmt
    return fmt


def _old(path: str, noun: str) -> str:
    from rankgate.io.tools.records import is_hf_folder

    try:
        if os.path.isdir(path) and is_hf_folder(path):
            return "hf"
        return _old_refine(path, _old_detect(path, noun), noun)
    except InputError as exc:
        return f"error: {exc}"


def _rows(loaded) -> object:
    """What a gold set or run holds, to compare two reads of the same data."""
    if hasattr(loaded, "judgements"):
        return loaded.judgements()
    return loaded.query_ids, loaded.r_query.tolist(), loaded.r_doc.to_pylist()


def _new(path: str, noun: str) -> str:
    try:
        return detect(path, noun).name
    except InputError as exc:
        return f"error: {exc}"


# --- inputs ------------------------------------------------------------------------------------------

RAGAS = [{"user_input": "q one", "retrieved_context_ids": ["d3", "d1"], "reference_context_ids": ["d1"]}]
DEEPEVAL = [{"input": "q one", "context": ["a"], "retrieval_context": ["a", "b"]}]
LLAMAINDEX = {"queries": {"q1": "what?"}, "corpus": {"n1": "text"}, "relevant_docs": {"q1": ["n1"]}, "mode": "text"}
GOLD = [{"query_id": "q1", "relevant": {"d1": 1}}, {"query_id": "q2", "relevant": {"d2": 2}}]
RUN = [{"query_id": "q1", "topk": [{"chunk_id": "d1", "score": 2.0}, {"chunk_id": "d2", "score": 1.0}]}]
SAMPLES = {"samples": [{"id": "s1", "input": {"question": "q"}, "expected_output": {"relevant": ["d1"]}}]}
OUTPUTS = {"s1": {"retrieved": ["d1", "d2"]}}


def _jsonl(rows) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _generated(root: Path) -> list[Path]:
    """Edge cases the detection has to tell apart, each as its own file or folder."""
    texts = {
        "gold.jsonl": _jsonl(GOLD), "run.jsonl": _jsonl(RUN), "gold.ndjson": _jsonl(GOLD),
        "gold_array.json": json.dumps(GOLD), "pretty.json": json.dumps(GOLD, indent=2),
        "gold_noext": _jsonl(GOLD), "run_noext": _jsonl(RUN), "bom.jsonl": "\ufeff" + _jsonl(GOLD),
        "bom_noext": "\ufeff" + _jsonl(RUN), "spaces_noext": "\n\n   " + _jsonl(RUN),
        "qrels.txt": "q1 0 d1 1\nq2 0 d2 2\n", "qrels_noext": "q1 0 d1 1\n", "run.trec": "q1 Q0 d1 1 2.0 sys\n",
        "bom_trec_noext": "\ufeffq1 Q0 d1 1 2.0 sys\n",
        "beir.tsv": "query-id\tcorpus-id\tscore\nq1\td1\t1\n", "table.tsv": "qid\tdocid\tscore\nq1\td1\t1\n",
        "trec_run.tsv": "q1\tQ0\td1\t1\t2.0\tsys\n", "json_run.tsv": _jsonl(RUN),
        "table.csv": "query_id,chunk_id,score\nq1,d1,1\n", "header_noext": "query_id,chunk_id,grade\nq1,d1,1\n",
        "beir_header_noext": "query-id\tcorpus-id\tscore\nq1\td1\t1\n",
        "ragas.jsonl": _jsonl(RAGAS), "ragas.csv": "user_input,retrieved_context_ids\nq,['d1']\n",
        "ragas_noext": _jsonl(RAGAS), "deepeval.json": json.dumps(DEEPEVAL), "deepeval.jsonl": _jsonl(DEEPEVAL),
        "goldens.json": json.dumps({"goldens": DEEPEVAL}), "llamaindex.json": json.dumps(LLAMAINDEX),
        "samples.json": json.dumps(SAMPLES), "outputs.json": json.dumps(OUTPUTS), "samples.yaml": "samples: []\n",
        "outputs.yml": "s1:\n  retrieved: [d1]\n", "summary.json": json.dumps({"metrics": {"mrr": 1.0}, "queries": 3}),
        "pandas.json": json.dumps({"query_id": {"0": "q1"}, "chunk_id": {"0": "d1"}, "score": {"0": 1.0}}),
        "empty.jsonl": "", "empty_noext": "", "empty.csv": "", "blank_noext": "\n  \n", "empty.tsv": "",
        "empty.yaml": "", "garbage.json": "{not json", "utf16_noext": "",
    }
    out = []
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
        out.append(root / name)
    (root / "utf16_noext").write_bytes("q1 0 d1 1\n".encode("utf-16"))
    for name in ("gold.jsonl", "qrels.txt", "ragas.jsonl", "table.csv", "table.tsv", "qrels_noext", "samples.json"):
        gz = root / (name + ".gz")
        gz.write_bytes(gzip.compress((root / name).read_bytes()))
        out.append(gz)
    (root / "gz_noext").write_bytes(gzip.compress(_jsonl(RUN).encode()))
    out.append(root / "gz_noext")
    table = pa.table({"query_id": ["q1"], "chunk_id": ["d1"], "score": [1.0]})
    for name in ("long.parquet", "long.pq", "long_noext", "long_magic.jsonl", "long_magic.csv"):
        pq.write_table(table, root / name)
        out.append(root / name)
    pq.write_table(pa.table({"user_input": ["q"], "retrieved_context_ids": [["d1"]]}), root / "ragas.parquet")
    out.append(root / "ragas.parquet")
    (root / "broken.parquet").write_bytes(b"not parquet at all")
    out.append(root / "broken.parquet")
    for folder, files in {"hf": ["dataset_info.json", "state.json", "data-00000-of-00001.arrow"],
                          "beir": ["corpus.jsonl", "qrels/test.tsv"], "plain": ["x.jsonl"],
                          "qrels_tsv": ["qrels.tsv"], "named.jsonl": ["a.txt"]}.items():
        for f in files:
            (root / folder / f).parent.mkdir(parents=True, exist_ok=True)
            (root / folder / f).write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
        out.append(root / folder)
    return out


def _data_files() -> list[Path]:
    return sorted(p for p in DATA.rglob("*") if p.is_file())


@pytest.mark.parametrize("noun", ["gold", "run"])
def test_table_detects_what_the_old_chain_detected(tmp_path, noun):
    paths = _data_files() + _generated(tmp_path)
    assert len(paths) > 90
    diffs = {str(p): (_old(str(p), noun), _new(str(p), noun)) for p in paths}
    assert {p: d for p, d in diffs.items() if d[0] != d[1]} == {}
    seen = {new for _, new in diffs.values()}  # the inputs exercise every built-in row and both refusals
    expected = {"jsonl", "trec", "csv", "ragas", "deepeval", "llamaindex", "samples", "parquet", "hf"} | (
        {"beir"} if noun == "gold" else set())
    assert expected <= seen
    assert any(s.startswith("error: ") and "is empty" in s for s in seen)
    assert any(s.startswith("error: ") and "is a folder" in s for s in seen)


def test_a_pipe_reads_as_its_file_does(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    for name, text, load in (("g", _jsonl(GOLD), load_gold), ("r", "q1 Q0 d1 1 2.0 sys\n", load_run),
                             ("t", "query_id,chunk_id,score\nq1,d1,1\n", load_run)):
        plain = tmp_path / f"{name}.txt"
        plain.write_text(text)
        fifo = tmp_path / f"{name}.fifo"
        os.mkfifo(fifo)
        writer = threading.Thread(target=fifo.write_text, args=(text,))
        writer.start()
        try:
            via_pipe = load(str(fifo))
        finally:
            writer.join()
        assert via_pipe.source == str(fifo)
        assert _rows(via_pipe) == _rows(load(str(plain)))


def test_choices_come_from_the_table():
    assert GOLD_FORMATS == ("jsonl", "trec", "beir", "parquet", "csv", "ragas", "deepeval", "llamaindex", "hf", "samples")
    assert RUN_FORMATS == ("jsonl", "trec", "parquet", "csv", "ragas", "deepeval", "llamaindex", "hf", "samples")
    assert {f.name for f in FORMATS} == set(GOLD_FORMATS)
    for row in FORMATS:  # every name the table gives resolves to a function
        from rankgate.io.detect import _function

        for spec in (row.sniff, row.gold, row.run):
            if spec is not None:
                assert callable(_function(spec)), spec


def test_unknown_format_is_refused_with_the_list(tmp_path):
    path = tmp_path / "g.jsonl"
    path.write_text(_jsonl(GOLD))
    with pytest.raises(UsageError, match="unknown run format 'beir'; expected one of: jsonl, trec, parquet, csv"):
        load_run(str(path), format="beir")
    with pytest.raises(UsageError, match="unknown gold format 'xml'; expected one of: jsonl, trec, beir"):
        load_gold(GOLD, format="xml")


def test_a_gold_only_format_read_as_a_run_says_so(tmp_path):
    path = tmp_path / "qa.json"
    path.write_text(json.dumps(LLAMAINDEX))
    with pytest.raises(InputError, match=r"qa\.json: a LlamaIndex EmbeddingQAFinetuneDataset holds a gold set, "
                                         r"not a run \(pass it as --gold\)"):
        load_run(str(path))


# --- the rankgate.formats entry-point group ----------------------------------------------------------

PLUGIN = '''
from rankgate.io import Gold, Run
from rankgate.io.formats import Format


def sniff(probe):
    return probe.container == "text" and probe.first_line.startswith("#pairs")


def _pairs(path):
    with open(path, encoding="utf-8") as fh:
        return [line.split() for line in fh if line.strip() and not line.startswith("#")]


def read_gold(path, name, columns, list_sep):
    from rankgate.io import load_gold

    rel = {}
    for qid, doc in _pairs(path):
        rel.setdefault(qid, {})[doc] = 1
    gold = load_gold(rel)
    gold.source = path
    return gold


def read_run(path, name, columns, list_sep):
    from rankgate.io import load_run

    ranked = {}
    for qid, doc in _pairs(path):
        ranked.setdefault(qid, []).append(doc)
    run = load_run(ranked)
    run.source = path
    return run


PAIRS = Format("pairs", (".pairs",), "pairs_format:sniff", "pairs_format:read_gold", "pairs_format:read_run",
               "a file of query-document pairs")
NOT_A_ROW = {"name": "pairs"}
'''


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """A package declaring a format in the ``rankgate.formats`` group, installed on sys.path as a
    dist-info folder (what pip leaves behind)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "pairs_format.py").write_text(textwrap.dedent(PLUGIN))
    dist = site / "pairs_format-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: pairs-format\nVersion: 1.0\n")

    def declare(*lines: str) -> None:
        (dist / "entry_points.txt").write_text("[rankgate.formats]\n" + "".join(f"{x}\n" for x in lines))
        plugins.clear_entry_points()

    declare("pairs = pairs_format:PAIRS")
    monkeypatch.syspath_prepend(str(site))
    plugins.clear_entry_points()
    yield declare
    sys.modules.pop("pairs_format", None)
    plugins.clear_entry_points()


def test_a_format_plugin_is_detected_and_read(tmp_path, plugin_dist):
    assert formats_for("gold")[-1] == "pairs" and formats_for("run")[-1] == "pairs"
    by_sniff = tmp_path / "gold_noext"
    by_sniff.write_text("#pairs\nq1 d1\nq2 d2\n")  # without the plug-in: a malformed TREC file
    by_ext = tmp_path / "run.pairs"
    by_ext.write_text("q1 d2\nq1 d1\n")
    gold = load_gold(str(by_sniff))
    run = load_run(str(by_ext))
    assert gold.source == str(by_sniff) and gold.judgements() == {"q1": {"d1": 1}, "q2": {"d2": 1}}
    assert _rows(run) == (["q1"], [0, 0], ["d2", "d1"])
    assert detect(str(by_sniff), "gold").name == "pairs"
    assert _rows(load_run(str(by_sniff), format="pairs")) == (["q1", "q2"], [0, 1], ["d1", "d2"])
    trec = tmp_path / "qrels.txt"  # the built-in rows still read what they read
    trec.write_text("q1 0 d1 1\n")
    assert detect(str(trec), "gold").name == "trec"
    with pytest.raises(UsageError, match=r"expected one of: jsonl, .*, samples, pairs$"):
        load_gold(str(trec), format="nope")


def test_a_broken_format_plugin_is_named(tmp_path, plugin_dist):
    trec = tmp_path / "qrels.txt"
    trec.write_text("q1 0 d1 1\n")
    plugin_dist("broken = pairs_format_missing:PAIRS")
    with pytest.raises(UsageError, match=r"format plug-in 'broken' \(pairs_format_missing:PAIRS, entry-point group "
                                         r"rankgate\.formats\) failed to load: ModuleNotFoundError"):
        load_gold(str(trec))
    plugin_dist("notarow = pairs_format:NOT_A_ROW")
    with pytest.raises(UsageError, match=r"format plug-in 'notarow' .* gave a dict, not a rankgate\.io\.formats\.Format"):
        load_gold(str(trec))
    plugin_dist("taken = pairs_format:TAKEN")
    (Path(sys.modules["pairs_format"].__file__)).write_text(textwrap.dedent(PLUGIN) + "\nTAKEN = PAIRS._replace(name='trec')\n")
    sys.modules.pop("pairs_format", None)
    with pytest.raises(UsageError, match=r"format plug-in 'taken' .* names format 'trec', which is already taken"):
        load_gold(str(trec))


def test_entry_point_objects_is_cached_and_serves_each_group(tmp_path, plugin_dist, monkeypatch):
    import importlib.metadata

    calls = []
    real = importlib.metadata.entry_points

    def counting(**kw):
        calls.append(kw.get("group"))
        return real(**kw)

    monkeypatch.setattr(importlib.metadata, "entry_points", counting)
    plugins.clear_entry_points()
    first = plugins.entry_point_objects("rankgate.formats", "format")
    again = plugins.entry_point_objects("rankgate.formats", "format")
    assert list(first) == ["pairs"] and first["pairs"] is again["pairs"]
    assert calls == ["rankgate.formats"]
    assert plugins.entry_point_objects("rankgate.retrievers", "retriever") == {}
    assert calls == ["rankgate.formats", "rankgate.retrievers"]


def test_built_in_formats_do_not_look_up_plugins(tmp_path, monkeypatch):
    import importlib.metadata

    calls = []
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: calls.append(kw) or [])
    plugins.clear_entry_points()
    for name, text in (("g.jsonl", _jsonl(GOLD)), ("g.csv", "query_id,chunk_id,grade\nq1,d1,1\n"),
                       ("g.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\n")):
        (tmp_path / name).write_text(text)
        load_gold(str(tmp_path / name), format=None)
    load_gold(str(tmp_path / "g.jsonl"), format="jsonl")
    for name in ("qrels.trec", "run.trec", "robust.qrels"):  # TREC by its ending: nothing to ask the plug-ins
        (tmp_path / name).write_text("q1 0 d1 1\n" if "run" not in name else "q1 Q0 d1 1 2.0 s\n")
        assert detect(str(tmp_path / name), "run" if "run" in name else "gold").name == "trec"
    assert calls == []
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")  # the fallback: a plug-in may claim it first
    assert detect(str(tmp_path / "qrels.txt"), "gold").name == "trec"
    assert [c["group"] for c in calls] == ["rankgate.formats"]
    plugins.clear_entry_points()
