"""GenEval's 553 prompts (its `evaluation_metadata.jsonl`, MIT, shipped in `data/` with its licence).

Prompt N of the file is GenEval's image folder `{N:05d}` and this project's prompt id
`geneval_{N:05d}` (a dataset folder's `geneval_*` split names its images so). Each line's
metadata (`tag`, `include`, `exclude`, `prompt`) is what GenEval's rules read; its JSON text is
what GenEval writes in a result's `metadata` field and groups prompts by.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from dataset_builder.layout import geneval_index, geneval_prompt_id
from negt2ibench.core.errors import UserError

from .config import COLORS
from .rules import RELATIONS

METADATA_FILE = "evaluation_metadata.jsonl"
OBJECT_NAMES_FILE = "object_names.txt"
# summary_scores.py prints the tasks in the order they first appear; in GenEval's file it is this one.
TASKS: tuple[str, ...] = ("single_object", "two_object", "counting", "colors", "position", "color_attr")


@dataclass(frozen=True)
class GenEvalPrompt:
    """One GenEval prompt: its index in the metadata file and its metadata."""

    index: int
    metadata: Mapping[str, Any]

    @property
    def prompt_id(self) -> str:
        return prompt_id(self.index)

    @property
    def tag(self) -> str:
        return str(self.metadata["tag"])

    @property
    def prompt(self) -> str:
        return str(self.metadata["prompt"])

    @property
    def metadata_json(self) -> str:
        """The metadata as GenEval writes it in a result (`json.dumps`, :253)."""
        return json.dumps(dict(self.metadata))


prompt_id = geneval_prompt_id  # the one naming of GenEval prompts (dataset_builder.layout)
prompt_index = geneval_index


def metadata_problem(metadata: Any) -> str | None:
    """Why a metadata object is not one GenEval's rules can read, or None."""
    if not isinstance(metadata, Mapping):
        return "not a JSON object"
    if not isinstance(metadata.get("tag"), str) or not isinstance(metadata.get("prompt"), str):
        return "needs a tag and a prompt (strings)"
    groups = 0
    for kind in ("include", "exclude"):
        clauses = metadata.get(kind, [])
        if not isinstance(clauses, list):
            return f"{kind} must be a list"
        for clause in clauses:
            if not isinstance(clause, Mapping) or not isinstance(clause.get("class"), str):
                return f"an {kind} clause needs a class name"
            count = clause.get("count")
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                return f"the {kind} clause of {clause['class']!r} needs a count ≥ 0"
            if "color" in clause and clause["color"] not in COLORS:
                return f"unknown colour {clause['color']!r} (GenEval's: {', '.join(COLORS)})"
            position = clause.get("position")
            if position is not None:
                if not (isinstance(position, list) and len(position) == 2 and position[0] in RELATIONS):
                    return f"position must be [relation, group], relation one of {', '.join(RELATIONS)}"
                if not isinstance(position[1], int) or not 0 <= position[1] < groups:
                    return f"the position of {clause['class']!r} must name an earlier include clause"
            groups += kind == "include"
    return None


def parse_metadata(text: str | bytes, source: str) -> dict[str, Any]:
    """One metadata object from JSON text; a `UserError` naming SOURCE when it is not valid."""
    try:
        metadata = json.loads(text)
    except ValueError as error:
        raise UserError(f"{source}: not JSON ({error})") from None
    problem = metadata_problem(metadata)
    if problem:
        raise UserError(f"{source}: not GenEval metadata ({problem})")
    return metadata


def read_metadata_file(path: str | Path) -> list[GenEvalPrompt]:
    """The prompts of an `evaluation_metadata.jsonl` (one metadata object a line)."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"no GenEval metadata file at {path}")
    prompts: list[GenEvalPrompt] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            prompts.append(GenEvalPrompt(len(prompts), parse_metadata(line, f"{path}:{number}")))
    if not prompts:
        raise UserError(f"{path} holds no GenEval metadata")
    return prompts


@cache
def _builtin() -> tuple[GenEvalPrompt, ...]:
    with resources.as_file(resources.files(__package__) / "data" / METADATA_FILE) as path:
        return tuple(read_metadata_file(path))


def load_geneval_prompts(path: str | Path | None = None) -> list[GenEvalPrompt]:
    """GenEval's 553 prompts (the shipped file), or those of another metadata file."""
    return list(_builtin()) if path is None else read_metadata_file(path)


@cache
def object_names() -> tuple[str, ...]:
    """GenEval's 80 class names (`object_names.txt`), in COCO's class order."""
    text = (resources.files(__package__) / "data" / OBJECT_NAMES_FILE).read_text(encoding="utf-8")
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def by_metadata(prompts: Sequence[GenEvalPrompt]) -> dict[str, GenEvalPrompt]:
    """Prompts by their canonical metadata JSON (sorted keys), for matching a result line to its prompt."""
    return {canonical(prompt.metadata): prompt for prompt in prompts}


def canonical(metadata: Mapping[str, Any]) -> str:
    return json.dumps(metadata, sort_keys=True, separators=(",", ":"))
