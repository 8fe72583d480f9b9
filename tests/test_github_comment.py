"""The sticky PR comment, upserted for real against a fake GitHub REST API on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from rankgate.render.comment import MARKER
from rankgate.render.github import MAX_CHARS, upsert_comment

from .fake_github import FakeGitHub

DATA = Path(__file__).parent / "data" / "gate"
SHIP = """\
gates:
  - metric: recall@5
    threshold: 0.5
defaults: {seed: 0, resamples: 200}
"""


@pytest.fixture
def github():
    gh = FakeGitHub()
    yield gh
    gh.close()


def body(text: str = "all good") -> str:
    return f"{MARKER}\n## ✅ Retrieval gate passed\n\n{text}\n"


def test_first_run_creates_and_the_second_updates(github, tmp_path):
    env = github.env(tmp_path)
    first = upsert_comment(body("one"), env=env)
    assert first.action == "created" and first.level == "" and len(github.comments) == 1
    second = upsert_comment(body("two"), env=env)
    assert second.action == "updated" and second.comment_id == first.comment_id
    assert len(github.comments) == 1 and github.comments[0]["body"].endswith("two\n")


def test_a_comment_posted_with_a_personal_token_is_found(github, tmp_path):
    env = github.env(tmp_path, token="pat-token")
    github.add(body("by a user"), "someone-else", "User")  # another person's copy: not ours to edit
    mine = github.add(body("old"), "octo-user", "User")  # a person's token: user type User, not Bot
    out = upsert_comment(body("new"), env=env)
    assert out.action == "updated" and out.comment_id == mine["id"]
    assert github.comments[0]["body"].endswith("by a user\n") and mine["body"].endswith("new\n")


def test_marker_only_when_the_token_may_not_read_its_own_user(github, tmp_path):
    github.user_refused = True  # an app installation token: GET /user is 403
    old = github.add(body("old"), "github-actions[bot]", "Bot")
    out = upsert_comment(body("new"), env=github.env(tmp_path))
    assert out.action == "updated" and out.comment_id == old["id"]


def test_a_body_with_leading_whitespace_and_crlf_is_found(github, tmp_path):
    old = github.add("\r\n  \ufeff" + body("old").replace("\n", "\r\n"), "github-actions[bot]", "Bot")
    github.add("quoting it: " + MARKER, "github-actions[bot]", "Bot")  # the marker not at the start: not ours
    out = upsert_comment(body("new"), env=github.env(tmp_path))
    assert out.action == "updated" and out.comment_id == old["id"] and len(github.comments) == 2


def test_pagination_past_100_comments(github, tmp_path):
    for i in range(230):
        github.add(f"comment {i}", "reviewer", "User")
    old = github.add(body("old"), "github-actions[bot]", "Bot")  # the 231st: on the third page
    out = upsert_comment(body("new"), env=github.env(tmp_path))
    assert out.action == "updated" and out.comment_id == old["id"]
    pages = [p for m, p in github.requests if m == "GET" and "/comments" in p]
    assert len(pages) == 3 and "page=3" in pages[-1]


def test_a_body_over_the_limit_is_cut_to_fit_with_a_note(github, tmp_path):
    out = upsert_comment(body("x" * 70_000), env=github.env(tmp_path))
    assert out.action == "created"
    posted = github.comments[0]["body"]
    assert len(posted) <= MAX_CHARS and posted.startswith(MARKER)
    assert "cut to fit GitHub's limit" in posted


def test_a_read_only_token_is_a_notice_not_a_failure(github, tmp_path):
    github.read_only = True
    out = upsert_comment(body(), env=github.env(tmp_path))
    assert out.action == "failed" and out.level == "notice"
    assert "HTTP 403" in out.message and "fork" in out.message


def test_network_failures_are_a_warning():
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = upsert_comment(body(), repo="acme/search", number=7, token="bot-token", api_url=f"http://127.0.0.1:{port}")
    assert out.action == "failed" and out.level == "warning" and "cannot reach" in out.message


def test_a_body_without_the_marker_gets_it_and_is_found_next_time(github, tmp_path):
    env = github.env(tmp_path)
    assert upsert_comment("hand-written\n", env=env).action == "created"
    assert github.comments[0]["body"] == f"{MARKER}\nhand-written\n"
    assert upsert_comment("again\n", env=env).action == "updated" and len(github.comments) == 1


def test_a_connection_cut_mid_answer_is_a_warning(github, tmp_path):
    github.truncate = True
    out = upsert_comment(body(), env=github.env(tmp_path))
    assert out.action == "failed" and out.level == "warning" and "IncompleteRead" in out.message


def test_outside_a_pull_request_nothing_is_posted(tmp_path):
    from rankgate.render.github import workflow_command

    out = upsert_comment(body(), env={"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "acme/search"})
    assert out.action == "skipped" and out.level == "notice"
    assert workflow_command(out, {}).startswith("rankgate: notice: not a pull request")
    assert workflow_command(out, {"GITHUB_ACTIONS": "true"}).startswith("::notice::not a pull request")


def test_links_to_another_host_are_not_followed(github, tmp_path):
    for i in range(101):
        github.add(f"comment {i}", "reviewer", "User")
    github.url = "http://localhost:1"  # the Link header now names another host
    env = github.env(tmp_path)
    env["GITHUB_API_URL"] = f"http://127.0.0.1:{github.server.server_address[1]}"
    out = upsert_comment(body(), env=env)
    assert out.action == "failed" and "another host" in out.message
    assert not any(m == "GET" and p.startswith("http://localhost") for m, p in github.requests)


# -- through the command, as the action runs it -------------------------------------------------
def run_gate(tmp_path, env, monkeypatch, capsys, *extra):
    from rankgate.cli.main import main

    for k, v in env.items():
        monkeypatch.setenv(k, v)
    step = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step))
    ship = tmp_path / "ship.yaml"
    ship.write_text(SHIP, encoding="utf-8")
    code = main(["gate", "--config", str(ship), "--gold", str(DATA / "gold.jsonl"), "--candidate",
                 str(DATA / "cand.jsonl"), "--comment", str(tmp_path / "c.md"), "--post-comment", *extra])
    return code, capsys.readouterr(), step


def test_gate_post_comment_creates_then_updates(github, tmp_path, monkeypatch, capsys):
    env = github.env(tmp_path)
    code, out, _ = run_gate(tmp_path, env, monkeypatch, capsys)
    assert code == 0 and "rankgate: PR comment created" in out.out and len(github.comments) == 1
    code, out, _ = run_gate(tmp_path, env, monkeypatch, capsys)
    assert code == 0 and "rankgate: PR comment updated" in out.out and len(github.comments) == 1
    assert github.comments[0]["body"] == (tmp_path / "c.md").read_text(encoding="utf-8")


def test_gate_on_a_fork_stays_green_with_a_notice_and_the_summary_written(github, tmp_path, monkeypatch, capsys):
    github.read_only = True
    code, out, step = run_gate(tmp_path, github.env(tmp_path), monkeypatch, capsys)
    assert code == 0 and out.err == ""
    assert "::notice::comment not posted: HTTP 403" in out.out
    assert step.read_text(encoding="utf-8").startswith(MARKER)


def test_gate_keeps_its_verdict_when_the_api_is_unreachable(tmp_path, monkeypatch, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 3}}), encoding="utf-8")
    env = {"GITHUB_API_URL": f"http://127.0.0.1:{port}", "GITHUB_REPOSITORY": "acme/search",
           "GITHUB_EVENT_PATH": str(event), "GITHUB_TOKEN": "t", "GITHUB_ACTIONS": "true"}
    code, out, _ = run_gate(tmp_path, env, monkeypatch, capsys)
    assert code == 0 and "::warning::comment not posted: cannot reach" in out.out
    assert "Traceback" not in out.out + out.err
