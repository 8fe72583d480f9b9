"""The PR comment client against an API whose replies are too large or whose comment list never ends.

Whatever goes wrong while looking for the sticky comment, nothing is posted (posting without having
seen every comment could put a second one beside the first): a warning, the job summary still
written, the gate's verdict unchanged.
"""

from __future__ import annotations

import pytest

from rankgate.render import github as gh_module
from rankgate.render.comment import MARKER
from rankgate.render.github import upsert_comment

from .fake_github import FakeGitHub
from .test_github_comment import body, run_gate


@pytest.fixture
def github():
    gh = FakeGitHub()
    yield gh
    gh.close()


def writes(gh: FakeGitHub) -> list[tuple[str, str]]:
    return [(m, p) for m, p in gh.requests if m in ("POST", "PATCH")]


def test_an_oversized_comment_list_posts_nothing_and_never_a_duplicate(github, tmp_path):
    ours = github.add(body("old"), "github-actions[bot]", "Bot")
    github.pad = 8 << 20
    for _ in range(2):
        out = upsert_comment(body("new"), env=github.env(tmp_path))
        assert out.action == "failed" and out.level == "warning"
        assert "reply larger than 1,000,000 bytes" in out.message and "--max-reply-bytes" in out.message
    assert writes(github) == [] and github.comments == [ours] and ours["body"] == body("old")


def test_a_raised_reply_cap_reads_a_large_list(github, tmp_path):
    github.add(body("old"), "github-actions[bot]", "Bot")
    github.pad = 2 << 20
    out = upsert_comment(body("new"), env=github.env(tmp_path), max_reply_bytes=4 << 20)
    assert out.action == "updated" and len(github.comments) == 1


def test_a_comment_list_longer_than_the_page_bound_posts_nothing(github, tmp_path, monkeypatch):
    monkeypatch.setattr(gh_module, "MAX_PAGES", 2)
    for i in range(250):  # three pages of 100; ours would be on the third
        github.add(f"comment {i}", "someone-else")
    github.add(body("old"), "github-actions[bot]", "Bot")
    out = upsert_comment(body("new"), env=github.env(tmp_path))
    assert out.action == "failed" and out.level == "warning" and "more than 200 comments" in out.message
    assert writes(github) == [] and len(github.comments) == 251


def test_gate_with_an_oversized_list_warns_writes_the_summary_and_keeps_its_verdict(github, tmp_path, monkeypatch,
                                                                                    capsys):
    github.add(body("old"), "github-actions[bot]", "Bot")
    github.pad = 8 << 20
    code, out, step = run_gate(tmp_path, github.env(tmp_path), monkeypatch, capsys)
    assert code == 0 and out.err == ""
    warnings = [line for line in out.out.splitlines() if line.startswith("::")]
    assert len(warnings) == 1 and warnings[0].startswith("::warning::comment not posted: GET /repos/acme/search/")
    assert "reply larger than 1,000,000 bytes" in warnings[0]
    assert step.read_text(encoding="utf-8").startswith(MARKER)
    assert writes(github) == [] and len(github.comments) == 1


def test_gate_max_reply_bytes_raises_the_cap(github, tmp_path, monkeypatch, capsys):
    github.add(body("old"), "github-actions[bot]", "Bot")
    github.pad = 2 << 20
    code, out, _ = run_gate(tmp_path, github.env(tmp_path), monkeypatch, capsys, "--max-reply-bytes", str(4 << 20))
    assert code == 0 and "rankgate: PR comment updated" in out.out and len(github.comments) == 1


@pytest.mark.parametrize("value", ["100", "99999999999"])
def test_gate_max_reply_bytes_out_of_range_is_a_usage_error(github, tmp_path, monkeypatch, capsys, value):
    code, out, step = run_gate(tmp_path, github.env(tmp_path), monkeypatch, capsys, "--max-reply-bytes", value)
    lines = [line for line in out.err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "--max-reply-bytes must be a whole number of bytes" in lines[0]
    assert "Traceback" not in out.err and not step.exists() and github.requests == []


@pytest.mark.parametrize("body_only", [False, True], ids=["headers-dripped", "body-dripped"])
def test_a_dripping_api_is_cut_off_and_nothing_is_posted(github, tmp_path, monkeypatch, body_only):
    monkeypatch.setattr(gh_module, "TIMEOUT", 0.3)  # one byte every 0.02 s: each wait is short, the whole is not
    github.drip, github.drip_body = 0.02, body_only
    out = upsert_comment(body("new"), env=github.env(tmp_path))
    assert out.action == "failed" and out.level == "warning"
    assert "GET /user: no whole reply within 0.3 s" in out.message
    assert writes(github) == [] and github.comments == []
