"""The judge's prompts: one versioned file per task in ``rankgate/judges/prompts/<task>.md``.

A prompt file has a front matter (``task``, ``version``) and two sections, ``## system`` and
``## user``; ``{{field}}`` in the user section is replaced by the item's field. The file's sha256 is
part of the judge's identity and of every cache key, so editing a prompt never reuses old labels.
Each task's answer has a JSON schema (sent as ``response_format`` where the server takes it).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from .base import TASK_FIELDS, TASKS, VERDICTS

__all__ = ["Prompt", "answer_schema", "max_tokens", "prompt"]

_FIELD = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class Prompt:
    task: str
    version: str
    sha256: str
    system: str
    user: str

    @property
    def label(self) -> str:
        """``"<task>@<version> sha256:<hex>"``, as shown in identities and outputs."""
        return f"{self.task}@{self.version} sha256:{self.sha256}"

    def messages(self, fields: Mapping[str, str]) -> list[dict[str, str]]:
        user = _FIELD.sub(lambda m: str(fields.get(m.group(1), "")), self.user)
        return [{"role": "system", "content": self.system}, {"role": "user", "content": user}]


def _parse(task: str, data: bytes) -> Prompt:
    text = data.decode("utf-8")
    match = re.match(r"---\n(.*?)\n---\n(.*)\Z", text, re.S)
    if not match:
        raise RuntimeError(f"prompt file for {task!r} has no front matter")
    meta = dict(line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    meta = {k.strip(): v.strip() for k, v in meta.items()}
    sections = dict(re.findall(r"^## (system|user)\n(.*?)(?=^## |\Z)", match.group(2), re.S | re.M))
    if meta.get("task") != task or "system" not in sections or "user" not in sections:
        raise RuntimeError(f"prompt file for {task!r} is malformed")
    unknown = set(_FIELD.findall(sections["user"])) - set(TASK_FIELDS[task])
    if unknown:
        raise RuntimeError(f"prompt file for {task!r} names unknown fields {sorted(unknown)}")
    return Prompt(task, meta.get("version", "0"), hashlib.sha256(data).hexdigest(),
                  sections["system"].strip(), sections["user"].strip())


@cache
def prompt(task: str) -> Prompt:
    """The packaged prompt for ``task``."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}")
    data = resources.files("rankgate.judges").joinpath("prompts").joinpath(f"{task}.md").read_bytes()
    return _parse(task, data)


def answer_schema(task: str) -> dict[str, Any]:
    """The JSON schema of the answer to ``task`` (strict-mode shape: every field required)."""
    if task == "statements":
        props: dict[str, Any] = {"statements": {"type": "array", "items": {"type": "string"}}}
    elif task in ("support", "correctness"):
        props = {"label": {"type": "string", "enum": list(VERDICTS)}}
    else:
        props = {"label": {"type": "integer", "enum": [0, 1, 2]}}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def max_tokens(task: str) -> int:
    """The answer budget sent as ``max_tokens`` (a statements list needs room; a label does not)."""
    return 1024 if task == "statements" else 64
