"""The judge client: API, lexical baseline, cache, user judges, plans and repeat variance."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankgate.errors import UsageError
from rankgate.judges import (TASKS, JudgeItem, Judgement, coverage, open_judge, repeat_variance)
from rankgate.judges.base import check_label, is_problem
from rankgate.judges.cache import JudgeCache, default_cache_dir
from rankgate.judges.extract import extract_json
from rankgate.judges.lexical import LexicalJudge, content_tokens, split_sentences
from rankgate.judges.prompts import answer_schema, prompt

from . import judge_plugins
from .conftest import ROOT, examples


def rel(key, question, passage):
    return JudgeItem(key, {"question": question, "passage": passage})


# -- lexical baseline ----------------------------------------------------------------------------
def test_lexical_tokens_and_sentences():
    assert content_tokens("The Refunds are not processed in 30 days") == ["refund", "processed", "30", "day"]
    assert split_sentences("One fact here. Two facts! Three?\n- bullet item\n2) numbered item") == [
        "One fact here.", "Two facts!", "Three?", "bullet item", "numbered item"]


@pytest.mark.parametrize("statement, context, verdict", [
    ("The refund window is 30 days.", "Our policy: the refund window is 30 days for all orders.", "supported"),
    ("The refund window is 60 days.", "The refund window is 30 days.", "contradicted"),
    ("The refund window is not 30 days.", "The refund window is 30 days.", "contradicted"),
    ("Shipping to Mars costs nothing.", "The refund window is 30 days.", "not_found"),
    ("It is.", "The refund window is 30 days.", "not_found"),  # no content token
    ("Refund window 30 days, shipping free.", "The refund window is 30 days.", "not_found"),  # 3/5 covered
])
def test_lexical_verdicts(statement, context, verdict):
    judge = LexicalJudge()
    assert judge.judge("support", {"statement": statement, "context": context}, seed=0) == verdict
    assert judge.judge("correctness", {"statement": statement, "reference": context}, seed=0) == verdict


def test_lexical_grades_and_statements():
    judge = LexicalJudge()
    q = "How long is the refund window?"  # content tokens: long, refund, window
    assert judge.judge("context_relevance", {"question": q, "passage": "The refund window is 30 days."}, seed=0) == 2
    assert judge.judge("context_relevance", {"question": q, "passage": "Refunds go to the card."}, seed=0) == 1
    assert judge.judge("context_relevance", {"question": q, "passage": "Shipping is free."}, seed=0) == 0
    assert judge.judge("answer_relevance", {"question": q, "answer": "I don't know."}, seed=0) == 0
    assert judge.judge("answer_relevance", {"question": q, "answer": "The refund window is 30 days."}, seed=0) == 2
    assert judge.judge("statements", {"question": q, "answer": "I don't know."}, seed=0) == ()
    assert judge.judge("statements", {"question": q, "answer": "Refunds take 30 days. Ok. Cards work too!"},
                       seed=0) == ("Refunds take 30 days.", "Cards work too!")


def test_lexical_client_is_named_and_never_cached(tmp_path):
    with open_judge("lexical", cache_dir=tmp_path) as judge:
        items = [rel("a", "refund window", "the refund window is 30 days"), rel("b", "refund window", "shipping")]
        out = judge.run("context_relevance", items, repeats=2)
        assert [(j.key, j.sample, j.label, j.cached) for j in out] == [
            ("a", 0, 2, False), ("a", 1, 2, False), ("b", 0, 0, False), ("b", 1, 0, False)]
        ident = judge.identity()
        assert ident["backend"] == "lexical" and ident["model"] == "lexical (token overlap baseline)"
        assert list(ident)[:5] == ["backend", "model", "url", "seed", "prompts"]
        plan = judge.plan("context_relevance", items, repeats=2)
        assert (plan.calls, plan.cache_hits, plan.approx_tokens, plan.model_calls) == (4, 0, 0, False)
        assert len(judge.cache) == 0


# -- labels and parsing --------------------------------------------------------------------------
def test_check_label_shapes():
    assert check_label("context_relevance", {"label": "2"}) == 2
    assert check_label("context_relevance", {"label": 1.0}) == 1
    assert is_problem(check_label("context_relevance", {"label": 3}))
    assert is_problem(check_label("context_relevance", {"label": True}))
    assert check_label("support", {"label": "Not Found"}) == "not_found"
    assert is_problem(check_label("support", {"verdict": "supported"}))
    assert check_label("statements", {"statements": [" a ", "", "b"]}) == ("a", "b")
    assert is_problem(check_label("statements", {"statements": "a"}))


@pytest.mark.parametrize("text, value", [
    ('{"label": 2}', {"label": 2}),
    ('Sure! Here it is:\n```json\n{"label": 1}\n```\nHope it helps.', {"label": 1}),
    ('The answer is {"label": "supported"} as requested.', {"label": "supported"}),
    ('Statements: ["a", "b"]', ["a", "b"]),
    ('{"label": 2', None),
    ("no json at all", None),
    ("", None),
])
def test_extract_json(text, value):
    assert extract_json(text) == value


def test_prompts_are_versioned_files():
    for task in TASKS:
        p = prompt(task)
        assert p.label.startswith(f"{task}@2 sha256:") and len(p.sha256) == 64
        assert "JSON" in p.system
        assert answer_schema(task)["additionalProperties"] is False
    msgs = prompt("context_relevance").messages({"question": "Q?", "passage": "P {{x}} <b>&"})
    assert msgs[1]["content"] == "<question>\nQ?\n</question>\n\n<passage>\nP {{x}} &lt;b&gt;&amp;\n</passage>"


# -- configuration errors ------------------------------------------------------------------------
@pytest.mark.parametrize("backend, kwargs, message", [
    ("lexcal", {}, "Did you mean 'lexical'"),
    ("openai", {"model": "m"}, "needs a URL"),
    ("openai", {"url": "http://127.0.0.1:1/v1"}, "needs a model name"),
    ("openai", {"url": "ftp://x/v1", "model": "m"}, "must be an http"),
    ("openai", {"url": "https://api.openai.com/v1", "model": "m"}, r"with key_env \(e.g. key_env='OPENAI_API_KEY'\)"),
    ("openai", {"url": "http://127.0.0.1:1/v1", "model": "m", "key_env": "RANKGATE_TEST_UNSET_KEY"}, "is not set"),
    ("no_such_module_xyz:Judge", {}, "Cannot import module"),
    ("tests.judge_plugins:Missing", {}, "has no attribute"),
    ("tests.judge_plugins:NotAJudge", {}, "has no judge"),
    ("tests.judge_plugins:NeedsModel", {}, "could not be built"),
    ("lexical", {"workers": 0}, "workers"),
])
def test_bad_configuration_is_a_usage_error(backend, kwargs, message, tmp_path, monkeypatch):
    monkeypatch.delenv("RANKGATE_TEST_UNSET_KEY", raising=False)
    with pytest.raises(UsageError, match=message):
        open_judge(backend, cache_dir=tmp_path, **kwargs)


def test_run_refuses_unknown_task_and_missing_fields(tmp_path):
    with open_judge("lexical", use_cache=False) as judge:
        with pytest.raises(UsageError, match="unknown judge task"):
            judge.run("relevance", [])
        with pytest.raises(UsageError, match="lacks text field"):
            judge.run("context_relevance", [JudgeItem("k", {"question": "q"})])
        with pytest.raises(UsageError, match="repeats"):
            judge.run("context_relevance", [], repeats=0)


# -- user judges, cache, failures as data --------------------------------------------------------
def test_user_judge_cache_and_errors(tmp_path):
    spec = "tests.judge_plugins:CountingJudge"
    items = [rel("a", "what is x", "x is here"), rel("b", "what is x", "nothing"),
             rel("c", "what is x", "boom"), rel("d", "what is x", "bad")]
    judge_plugins.CountingJudge.calls = 0
    with open_judge(spec, cache_dir=tmp_path, workers=3) as judge:
        first = judge.run("context_relevance", items)
        assert [(j.key, j.label) for j in first] == [("a", 2), ("b", 0), ("c", None), ("d", None)]
        assert first[2].error == "RuntimeError: model exploded"
        assert first[3].error.startswith("the judge returned an invalid label")
        assert coverage(first) == (2, 4)
        assert judge_plugins.CountingJudge.calls == 4
        assert judge.plan("context_relevance", items).cache_hits == 2
        second = judge.run("context_relevance", items)
        assert [j.cached for j in second] == [True, True, False, False]  # errors are never cached
        assert [j.label for j in second] == [j.label for j in first]
        assert judge_plugins.CountingJudge.calls == 6
    with open_judge(spec, cache_dir=tmp_path, refresh=True) as judge:
        assert not any(j.cached for j in judge.run("context_relevance", items[:2]))
    with open_judge(spec, cache_dir=tmp_path, use_cache=False) as judge:
        assert judge.cache is None
        assert not any(j.cached for j in judge.run("context_relevance", items[:2]))


def test_repeats_use_seed_plus_sample_and_variance(tmp_path):
    with open_judge("tests.judge_plugins:SeedJudge", cache_dir=tmp_path, seed=4) as judge:
        out = judge.run("context_relevance", [rel("a", "q", "p"), rel("b", "q", "p")], repeats=3)
        assert [j.label for j in out] == [0, 1, 0, 0, 1, 0]
        assert judge.identity()["model"] == "seed-parity" and judge.identity()["seed"] == 4
    var = repeat_variance(out)
    assert (var.items, var.changed, var.share) == (2, 2, 1.0)
    same = [Judgement("a", "t", i, 1, None, False) for i in range(3)] + [Judgement("b", "t", 0, 1, None, False)]
    assert repeat_variance(same).items == 1 and repeat_variance(same).share == 0.0
    assert math.isnan(repeat_variance([]).share)


def test_cache_folder_resolution(monkeypatch, tmp_path):
    monkeypatch.setenv("RANKGATE_CACHE_DIR", str(tmp_path / "a"))
    assert default_cache_dir() == tmp_path / "a"
    monkeypatch.delenv("RANKGATE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x" / "rankgate"
    cache = JudgeCache(tmp_path / "c")
    cache.put_many([("k", "context_relevance", "2", "{}", {"prompt_tokens": 3}, None)])
    assert cache.get_many(["k", "missing"]) == {"k": "2"}
    cache.close()
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError, match="use_cache=False"):
        JudgeCache(tmp_path / "file" / "sub")


def test_import_stays_light():
    code = ("import sys, rankgate.judges\n"
            "print(sorted(m for m in ('httpx', 'numpy', 'rich', 'rankgate.retrieval') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_cache_that_cannot_be_written_warns_and_keeps_the_labels(tmp_path, capsys):
    judge_plugins.CountingJudge.calls = 0
    with open_judge("tests.judge_plugins:CountingJudge", cache_dir=tmp_path) as judge:
        judge.cache._db.execute("CREATE TRIGGER full BEFORE INSERT ON judgements BEGIN "
                                "SELECT RAISE(ABORT, 'database or disk is full'); END")
        out = judge.run("context_relevance", [rel("a", "what is x", "x is here")])
        assert out[0].label == 2 and judge.cache.broken
    assert "cannot be written" in capsys.readouterr().err


def test_progress_bar_on_a_terminal_does_not_change_results(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with open_judge("tests.judge_plugins:CountingJudge", use_cache=False, progress=True) as judge:
        out = judge.run("context_relevance", [rel(str(i), "what is x", "x" if i % 2 else "y") for i in range(40)])
    assert [j.label for j in out] == [0, 2] * 20


def test_plan_fields_keep_the_documented_order():
    from rankgate.judges import Plan

    p = Plan(5, 2, 100)
    assert (p.calls, p.cache_hits, p.approx_tokens, p.to_send) == (5, 2, 100, 3)


@settings(max_examples=examples(25), deadline=None)
@given(passages=st.lists(st.sampled_from(["x here", "nothing", "boom", "bad"]), max_size=30),
       workers=st.integers(1, 6), repeats=st.integers(1, 3))
def test_run_keeps_item_order_whatever_finishes_first(passages, workers, repeats):
    items = [rel(f"k{i}", "what is x", p) for i, p in enumerate(passages)]
    expect = {"x here": (2, None), "nothing": (0, None), "boom": (None, "RuntimeError: model exploded"),
              "bad": (None, "invalid")}
    with open_judge("tests.judge_plugins:CountingJudge", use_cache=False, workers=workers) as judge:
        out = judge.run("context_relevance", items, repeats=repeats)
    assert [(j.key, j.sample) for j in out] == [(f"k{i}", s) for i in range(len(items)) for s in range(repeats)]
    for j in out:
        label, error = expect[passages[int(j.key[1:])]]
        assert j.label == label and (j.error is None) == (error is None)
        assert error is None or error in j.error
    assert coverage(out) == (sum(1 for p in passages if p in ("x here", "nothing")) * repeats, len(out))
