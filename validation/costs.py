"""The cost columns of Table 2 (Params, GiB, s/img), from run records; never estimated.

A cost record is a JSON object naming its evaluator by ``"judge"`` (a judge key, as the run
record `negt2ibench judge` writes beside its results, `judges.run_record.run_record_path`) or by
``"evaluator"`` (any evaluator name, e.g. ``"negt2ibench/current"``, for a record written by
hand). Its optional fields: ``params`` ("8B", "600M"; a judge's registry entry gives it when the
record does not), ``peak_memory_gib`` and ``memory_kind`` ("cuda" or "rss"), and the time:
``seconds_per_question`` with ``modes.pos.questions_per_image`` (or ``neg``'s), or
``seconds_per_image``.

s/img is Table 8's: for a judge, s/question times the per-element questions an image carries
in the run (so an ``all`` run, which also asks the whole-prompt and negated-form questions,
is charged for the per-element mode alone); otherwise the record's ``seconds_per_image``. A
field the record lacks is a blank cell.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from negt2ibench.core.errors import UserError

from .evaluators import MODES, split_evaluator

RUN_RECORD_SUFFIX = ".run.json"  # = judges.run_record.RUN_RECORD_SUFFIX (tests/validation/test_costs.py holds it)
_PARAMS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([MB])\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Cost:
    """One evaluator's cost; None where its record says nothing."""

    key: str  # the judge key or evaluator name it belongs to (`EvaluatorGroup.key`)
    params: float | None  # billions of parameters
    gib: float | None
    seconds_per_image: float | None
    memory_kind: str
    source: str


def parse_params(text: object) -> float | None:
    """ "8B" → 8.0, "600M" → 0.6 (billions); None for "?", "" or anything else."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = _PARAMS.match(str(text or ""))
    if not match:
        return None
    value = float(match[1])
    return value / 1000 if match[2].upper() == "M" else value


def _number(data: Mapping, key: str, source: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise UserError(f"{source}: {key} must be a non-negative number, got {value!r}")
    return float(value)


def _questions_per_image(data: Mapping, source: str) -> float | None:
    modes = data.get("modes")
    if modes is None:
        return None
    if not isinstance(modes, Mapping):
        raise UserError(f"{source}: modes must be an object (mode → counts)")
    for mode in ("pos", "neg"):
        if isinstance(modes.get(mode), Mapping):
            value = _number(modes[mode], "questions_per_image", source)
            if value:
                return value
    return None


def cost_from_record(data: object, source: str) -> Cost:
    """A `Cost` from one cost record (a judge's run record or a hand-written one); `UserError` if malformed."""
    if not isinstance(data, Mapping):
        raise UserError(f"{source}: a cost record is a JSON object, got {type(data).__name__}")
    name = data.get("judge") or data.get("evaluator")
    if not isinstance(name, str) or not name.strip():
        raise UserError(f'{source}: a cost record names its evaluator by "judge" or "evaluator"')
    key = name if "judge" in data and data.get("judge") else split_evaluator(name)[0]
    params = parse_params(data.get("params"))
    if params is None and "judge" in data:
        from judges.registry import REGISTRY

        params = parse_params(REGISTRY[key].params) if key in REGISTRY else None
    per_question = _number(data, "seconds_per_question", source)
    questions = _questions_per_image(data, source)
    seconds = per_question * questions if per_question is not None and questions else None
    if seconds is None:
        seconds = _number(data, "seconds_per_image", source)
    kind = data.get("memory_kind") or ""
    return Cost(key, params, _number(data, "peak_memory_gib", source), seconds, str(kind), source)


def read_cost_file(path: str | Path) -> Cost:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such cost record") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise UserError(f"{path}: not a JSON cost record ({error})") from None
    return cost_from_record(data, str(path))


def beside(results: str | Path) -> list[Path]:
    """Where a results file's run record may be: ``X.run.json`` beside ``X.jsonl``, and, for a
    mode's file of an ``all`` run (``X.pos.jsonl``), ``X.run.json``."""
    path = Path(results)
    stem = path.name[: -len(path.suffix)] if path.suffix else path.name
    candidates = [path.with_name(stem + RUN_RECORD_SUFFIX)]
    head, _, mode = stem.rpartition(".")
    if head and mode in MODES:
        candidates.append(path.with_name(head + RUN_RECORD_SUFFIX))
    return candidates


def gather_costs(results: Iterable[str | Path], explicit: Iterable[str | Path] = ()) -> dict[str, Cost]:
    """{evaluator key: Cost}: the `explicit` records (``--costs``) first, then the run records found
    beside the results files; the first record of a key wins."""
    costs: dict[str, Cost] = {}
    for path in explicit:
        cost = read_cost_file(path)
        costs.setdefault(cost.key, cost)
    for result in results:
        for candidate in beside(result):
            if candidate.is_file():
                cost = read_cost_file(candidate)
                costs.setdefault(cost.key, cost)
    return costs
