"""What the spot check compares, and that the Space shows nothing else (leaderboard/checks/compared_fields.py).

- Every field of a result record, found by walking the pydantic models (so a field added later
  is found too), is either compared (changing it makes the image disagree) or not (changing it
  changes nothing, and `compared_record` empties it, so no view can show it).
- The numbers the leaderboard and the model detail show (`shown_numbers`: the Table 3 row, statement
  accuracy, failure causes, and whatever is added there later) are computed on records that
  write down every field read: each one must be compared (or checked at submission).
- Forged files replayed on the spot check itself: a file whose causes are rewritten, one
  with statement-only flips, one-sided error rows in either direction are rejected; error rows on
  both sides agree.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from PIL import Image
from pydantic import BaseModel

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import ObjectResult, ResultRecord, StatementResult
from leaderboard.checks.compared_fields import (
    CHECKED_FIELDS,
    COMPARED_FIELDS,
    NOT_SCORED,
    compared_record,
    disagreement,
    shown_numbers,
)
from leaderboard.checks.spot_check_policy import spot_check_plan
from leaderboard.checks.spot_check_run import spot_check
from tests.helpers.space_helpers import result_line

NESTED: dict[str, type[BaseModel]] = {"objects": ObjectResult, "statements": StatementResult}


def record_fields() -> set[str]:
    """Every field path of a result record: "passed", "statements.cause", ..."""
    paths = set()
    for name in ResultRecord.model_fields:
        if name in NESTED:
            paths |= {f"{name}.{inner}" for inner in NESTED[name].model_fields}
        elif name != "questions":  # a VLM judge's questions: never in a scorer's record (checked below)
            paths.add(name)
    return paths


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


def scored(prompt, sample: int = 0, **changes: Any) -> ResultRecord:
    """A full record of `prompt`: every object present, the first statement satisfied and the
    others failed with a cause, measurements and confidences filled in (so each field has a value)."""
    line = result_line(prompt, sample, "toy", passed=False)
    for k, statement in enumerate(line["statements"]):
        statement.update(
            satisfied=k == 0,
            cause=None if k == 0 else "forbidden_rendered" if statement["polarity"] == "negated" else "wrong_value",
            observed=["red"],
            measurements={"margin": 0.5},
        )
    for obj in line["objects"]:
        obj.update(present=True, confidence=0.7, box=[1.0, 2.0, 3.0, 4.0])
    line["score"] = 0.5
    line["scored_at"] = "2026-01-01T00:00:00Z"
    line.update(changes)
    return ResultRecord.model_validate(line)


def changed(record: ResultRecord, path: str) -> ResultRecord:
    """`record` with the field at `path` (of its first object / statement) set to another valid value."""
    other = {
        "prompt_id": "color_pos1_neg0_001",
        "sample_index": 3,
        "model_key": "other",
        "passed": not record.passed,
        "error": "could not decode",
        "evaluator_version": "0.0.1",
        "config_hash": "0badc0de",
        "evaluator": "someone/else",
        "score": 0.9,
        "scored_at": "2026-12-03T17:19:00Z",
        "objects.name": "zebra",
        "objects.present": False,
        "objects.confidence": 0.01,
        "objects.box": [9.0, 9.0, 10.0, 10.0],
        "objects.mask_empty": True,
        "statements.index": 7,
        "statements.polarity": "negated" if record.statements[0].polarity == "positive" else "positive",
        "statements.satisfied": False,
        "statements.cause": "dead_zone",
        "statements.observed": ["blue"],
        "statements.measurements": {"margin": 0.1},
        "statements.dead_zone_pass": True,
    }[path]
    if "." not in path:
        return record.model_copy(update={path: other})
    group, name = path.split(".")
    items = list(getattr(record, group))
    update = {name: other}
    if path == "statements.satisfied":
        update["cause"] = "subject_missing"  # a failed statement has a cause
    items[0] = items[0].model_copy(update=update)
    return record.model_copy(update={group: items})


def test_every_field_is_compared_or_emptied(prompts):
    """Changing a compared field makes the image disagree; changing any other field does not, and
    `compared_record` empties it. Identity fields name the image (the re-score is asked for it)."""
    record = scored(next(p for p in prompts if p.prompt_id == "color_pos1_neg1_000"))
    fields = record_fields()
    assert COMPARED_FIELDS <= fields and CHECKED_FIELDS <= fields
    assert not record.questions  # the scorer writes none; a judge's record is never a submission
    identity = {"prompt_id", "sample_index", "model_key"}
    for path in sorted(fields):
        other = changed(record, path)
        assert other != record, path
        if path in COMPARED_FIELDS - identity:
            assert disagreement(record, other) and disagreement(other, record), path
        elif path not in identity:
            assert disagreement(record, other) == "", path
            if path not in CHECKED_FIELDS:
                assert compared_record(other) == compared_record(record), path


class Recording:
    """A record (or an object or a statement of one) that writes down every field read through it."""

    def __init__(self, target: BaseModel, prefix: str, seen: set[str]):
        self._target, self._prefix, self._seen = target, prefix, seen

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(type(self._target), name, None)
        if isinstance(attribute, property):  # e.g. `key`: read its fields through this record
            return attribute.fget(self)
        if callable(attribute):
            raise AssertionError(f"a view called {self._prefix}{name}(): say which fields it reads")
        value = getattr(self._target, name)
        if name in NESTED:  # the list itself: its items' fields are what is read
            return [Recording(item, f"{name}.", self._seen) for item in value]
        self._seen.add(self._prefix + name)
        return value


def test_the_shown_numbers_read_only_compared_fields(prompts):
    """Run what the leaderboard row and the model detail are computed by on records of every
    category and setting, passes, fails with each cause, dead-zone passes and error rows."""
    rng = random.Random(0)
    records = []
    for prompt in prompts[::7]:
        record = scored(prompt)
        if rng.random() < 0.3:
            record = compared_record(record).model_copy(update={"error": "not scored", "passed": False})
        elif rng.random() < 0.3:
            good = [
                s.model_copy(update={"satisfied": True, "cause": None, "dead_zone_pass": True})
                for s in record.statements
            ]
            record = record.model_copy(update={"statements": good, "passed": True})
        records.append(record)
    seen: set[str] = set()
    row, detail = shown_numbers([Recording(record, "", seen) for record in records])  # type: ignore[misc]
    assert row["images"] > 0 and set(detail) == {"statement_accuracy", "failure_causes", "overall_interval"}
    assert {"passed", "error", "statements.satisfied", "statements.cause"} <= seen  # it did read records
    not_compared = seen - COMPARED_FIELDS - CHECKED_FIELDS
    assert not not_compared, (
        f"the leaderboard or the model detail reads fields the spot check does not compare: {not_compared}"
    )
    # the same numbers as on the compared copies, where every other field is emptied
    assert (row, detail) == shown_numbers(records) == shown_numbers([compared_record(r) for r in records])


def test_shown_numbers_ignore_what_is_not_compared(prompts):
    records = [scored(p) for p in prompts[::50]]
    assert shown_numbers(records).detail == shown_numbers(records)[1]
    noisy = [
        r.model_copy(update={"score": 0.123, "objects": [o.model_copy(update={"confidence": 0.0}) for o in r.objects]})
        for r in records
    ]
    assert shown_numbers(records) == shown_numbers(noisy)


# -- the spot check on fabricated files ------------------------------------------------------------


class FlatImages:
    def images(self, keys):
        for key in keys:
            yield key, Image.new("RGB", (64, 64), (120, 120, 120))


def rescore_as(truth: dict[tuple[str, int], ResultRecord]):
    """A scorer double that answers each image with its record in `truth`."""

    def score(images, prompts, model_key, sample_indices):
        return [truth[p.prompt_id, s] for p, s in zip(prompts, sample_indices, strict=True)]

    return score


@pytest.fixture(scope="module")
def truth(prompts) -> list[ResultRecord]:
    """What a re-score finds: every object missing (the rectangle double's flat images)."""
    return [ResultRecord.model_validate(result_line(p, s, "toy", passed=False)) for p in prompts for s in range(4)]


def fabricated(truth, share: float, seed: int, rewrite) -> list[ResultRecord]:
    chosen = set(random.Random(seed).sample(range(len(truth)), round(share * len(truth))))
    return [rewrite(record) if k in chosen else record for k, record in enumerate(truth)]


def check(results, truth, prompts, seed: int = 0):
    plan = spot_check_plan(len(results))
    truths = {(r.prompt_id, r.sample_index): r for r in truth}
    return spot_check(results, FlatImages(), PromptIndex(prompts), rescore_as(truths), plan=plan, seed=seed)


def causes_rewritten(record: ResultRecord) -> ResultRecord:
    """A forged file: every `subject_missing` rewritten to `forbidden_rendered` (verdicts kept)."""
    statements = [s.model_copy(update={"cause": "forbidden_rendered"}) for s in record.statements]
    return record.model_copy(update={"statements": statements})


def statement_flipped(record: ResultRecord) -> ResultRecord:
    """One statement claimed satisfied; the image still fails (an object is missing): only a
    statement's verdict differs."""
    statements = list(record.statements)
    statements[0] = statements[0].model_copy(update={"satisfied": True, "cause": None})
    return record.model_copy(update={"statements": statements})


def claimed_error(record: ResultRecord) -> ResultRecord:
    """A failed image turned into an error row (which the report leaves out of every accuracy)."""
    return record.model_copy(update={"error": "could not decode", "objects": [], "statements": []})


def objects_claimed(record: ResultRecord) -> ResultRecord:
    objects = [o.model_copy(update={"present": True, "confidence": 0.9}) for o in record.objects]
    return record.model_copy(update={"objects": objects})


@pytest.mark.slow
@pytest.mark.parametrize(
    "rewrite, share",
    [
        (causes_rewritten, 1.0),
        (causes_rewritten, 0.03),
        (statement_flipped, 0.03),
        (claimed_error, 0.03),
        (objects_claimed, 0.03),
    ],
    ids=["all-causes", "causes-3%", "statement-only-3%", "error-rows-3%", "objects-3%"],
)
def test_fabricated_fields_are_rejected(truth, prompts, rewrite, share):
    for seed in range(3):
        outcome = check(fabricated(truth, share, seed, rewrite), truth, prompts, seed=seed)
        assert not outcome.accepted, (rewrite.__name__, seed, len(outcome.disagreements))


def test_each_disagreement_path(prompts):
    prompt = next(p for p in prompts if p.prompt_id == "color_pos1_neg1_000")
    failed = ResultRecord.model_validate(result_line(prompt, 0, "toy", passed=False))
    error_row = claimed_error(failed)
    other_error = error_row.model_copy(update={"error": "another failure text"})
    rewritten = disagreement(causes_rewritten(failed), failed)
    assert rewritten.startswith(
        "color_pos1_neg1_000 sample 0: statement 0: submitted positive 0 failed (forbidden_rendered)"
    )
    assert "re-scored positive 0 failed (subject_missing)" in rewritten
    assert "statement 0: submitted positive 0 satisfied" in disagreement(statement_flipped(failed), failed)
    assert "submitted error, re-scored fail" in disagreement(error_row, failed)  # claimed unscorable
    assert "submitted fail, re-scored error" in disagreement(failed, error_row)  # the re-score could not
    assert disagreement(error_row, other_error) == ""  # neither side could score it: they agree
    assert "objects present" in disagreement(objects_claimed(failed), failed)
    assert disagreement(failed, failed.model_copy(update={"score": 0.5})) == ""
    flagged = failed.model_copy(
        update={"statements": [failed.statements[0], failed.statements[1].model_copy(update={"dead_zone_pass": True})]}
    )
    assert "submitted negated 1 failed (subject_missing), dead-zone pass" in disagreement(flagged, failed)
    # what the comparison sees: an error row is not passed whatever it claims; confidences are emptied
    seen = compared_record(error_row.model_copy(update={"passed": True}))
    assert (seen.passed, seen.error, seen.objects, seen.statements) == (False, NOT_SCORED, [], [])
    assert [o.confidence for o in compared_record(objects_claimed(failed)).objects] == [0.0] * len(failed.objects)


def test_statements_and_objects_added_or_removed_disagree(prompts):
    """A file that drops a failed statement or object (or adds one) from an image disagrees with the
    re-score, even when every item both sides list agrees and the verdict is the same."""
    prompt = next(p for p in prompts if p.prompt_id == "color_pos1_neg1_000")
    failed = ResultRecord.model_validate(result_line(prompt, 0, "toy", passed=False))
    assert len(failed.statements) == 2 and len(failed.objects) >= 1
    first_statement = failed.model_copy(update={"statements": failed.statements[:1]})
    extra = failed.statements[-1].model_copy(update={"index": 2})
    one_more = failed.model_copy(update={"statements": [*failed.statements, extra]})
    assert "submitted 1 statements, re-scored 2" in disagreement(first_statement, failed)
    assert "submitted 2 statements, re-scored 1" in disagreement(failed, first_statement)
    assert "submitted 3 statements, re-scored 2" in disagreement(one_more, failed)
    no_objects = failed.model_copy(update={"objects": []})
    another = ObjectResult(name="zebra", present=False, confidence=0.0)
    more_objects = failed.model_copy(update={"objects": [*failed.objects, another]})
    assert "objects present: submitted []" in disagreement(no_objects, failed)
    assert "objects present" in disagreement(failed, no_objects)
    assert "('zebra', False)" in disagreement(more_objects, failed)
    assert disagreement(failed, failed.model_copy()) == ""


def test_shared_error_rows_agree_but_stay_out_of_the_ranking(truth, prompts):
    """Error rows both sides share are no disagreement (an honest file with a broken image is not
    rejected for it); such a file is held for a full re-score instead (test_holds)."""
    shared = {k for k in range(0, len(truth), 97)}
    rows = [claimed_error(r) if k in shared else r for k, r in enumerate(truth)]
    outcome = check(rows, rows, prompts)
    assert outcome.accepted and outcome.disagreements == []
