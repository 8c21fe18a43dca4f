"""The fields of a result record the spot check compares, and the numbers the Space shows from them only.

A submitted file claims one `ResultRecord` per image. The spot check (`leaderboard.checks.spot_check_run`) re-scores
a sample of the images and counts an image as disagreeing when any of `COMPARED_FIELDS` differs:
whether it could be scored at all (its error *state*, not the error's text), its pass or fail,
each object's presence and each statement's verdict, cause and dead-zone flag. Everything else
in a record (confidences, boxes, measurements, the observed values, the continuous `score`)
moves with the hardware at every score and is never compared.

So the Space shows only numbers computed from those fields. `compared_record(record)` is the
record with every other field emptied (what the comparison sees). `shown_numbers(results)` is the
leaderboard row (Table 3's columns) and the model detail (statement accuracy, failure causes) of
a submission: it reads only compared fields, which tests/leaderboard/checks/test_compared_fields.py holds it to (it
runs `shown_numbers` on records that write down every field read, and fails on one that is not
compared); a number added to the detail is added in `shown_numbers`, under that test. (It reads the
records as they are: building the compared copy of 19,200 records costs more than reading the
file, benchmarks/RESULTS.md.)

`CHECKED_FIELDS` are checked for every record when the file is submitted
(`leaderboard.intake.submissions.check_results`: one model key, this Space's evaluator version and config
hash, every prompt × sample once), so they are kept too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from evaluator.results import ObjectResult, ResultRecord, StatementResult, is_error_row, record_verdict
from leaderboard.store.entries import EntryStatementAccuracy, ModelDetail

if TYPE_CHECKING:  # the report is imported when numbers are computed, not with this module
    from evaluator.report.numbers import LeaderboardRow

# Field paths: "statements.cause" is the `cause` of every statement of a record.
COMPARED_FIELDS: frozenset[str] = frozenset(
    {
        "prompt_id",  # which image: the re-score is asked for exactly this one ...
        "sample_index",
        "model_key",  # ... of this split
        "error",  # its state (scored or not), never its text
        "passed",
        "objects.name",
        "objects.present",
        "statements.index",
        "statements.polarity",
        "statements.satisfied",
        "statements.cause",
        "statements.dead_zone_pass",
    }
)
CHECKED_FIELDS: frozenset[str] = frozenset({"evaluator_version", "config_hash"})
NOT_SCORED = "not scored"  # the error text of every error row once compared: only the state counts


class ShownNumbers(NamedTuple):
    """What the Space shows of a submission (`shown_numbers`); a named pair, so `row, detail = ...` unpacks it."""

    row: LeaderboardRow  # its leaderboard row (Table 3's columns)
    detail: ModelDetail


def compared_record(record: ResultRecord) -> ResultRecord:
    """The record as the spot check compares it.

    Args:
        record: a result record as submitted or re-scored.

    Returns:
        A copy with `COMPARED_FIELDS` and `CHECKED_FIELDS` kept and every other field at its
        empty default; an error row keeps only which image it is (and `NOT_SCORED` as its error).
    """
    base: dict[str, Any] = {
        "prompt_id": record.prompt_id,
        "model_key": record.model_key,
        "sample_index": record.sample_index,
        "evaluator_version": record.evaluator_version,
        "config_hash": record.config_hash,
    }
    if is_error_row(record):
        return ResultRecord(**base, passed=False, error=NOT_SCORED)
    return ResultRecord(
        **base,
        passed=record.passed,
        objects=[ObjectResult(name=o.name, present=o.present, confidence=0.0) for o in record.objects],
        statements=[
            StatementResult(
                index=s.index,
                polarity=s.polarity,
                satisfied=s.satisfied,
                cause=s.cause,
                dead_zone_pass=s.dead_zone_pass,
            )
            for s in record.statements
        ],
    )


def _differences(submitted: ResultRecord, rescored: ResultRecord) -> list[str]:
    """What differs between two compared records, in words (empty when they agree)."""
    theirs_verdict, our_verdict = record_verdict(submitted), record_verdict(rescored)
    if theirs_verdict != our_verdict:
        return [f"submitted {theirs_verdict}, re-scored {our_verdict}"]
    found = []
    theirs_objects = [(o.name, o.present) for o in submitted.objects]
    ours_objects = [(o.name, o.present) for o in rescored.objects]
    if theirs_objects != ours_objects:
        found.append(f"objects present: submitted {theirs_objects}, re-scored {ours_objects}")
    if len(submitted.statements) != len(rescored.statements):
        found.append(f"submitted {len(submitted.statements)} statements, re-scored {len(rescored.statements)}")
    for theirs, ours in zip(submitted.statements, rescored.statements, strict=False):
        if theirs != ours:
            found.append(f"statement {ours.index}: submitted {_statement(theirs)}, re-scored {_statement(ours)}")
    return found


def _statement(statement: StatementResult) -> str:
    verdict = "satisfied" if statement.satisfied else f"failed ({statement.cause})"
    extra = ", dead-zone pass" if statement.dead_zone_pass else ""
    return f"{statement.polarity} {statement.index} {verdict}{extra}"


def disagreement(submitted: ResultRecord, rescored: ResultRecord) -> str:
    """Why two records of one image differ in a compared field.

    Args:
        submitted: the submitted record of an image.
        rescored: this Space's record of the same image.

    Returns:
        "PROMPT_ID sample N: " and the first two differences in words, or "" when every compared
        field agrees (two error rows agree: neither side could score the image).
    """
    found = _differences(compared_record(submitted), compared_record(rescored))
    if not found:
        return ""
    return f"{submitted.prompt_id} sample {submitted.sample_index}: " + "; ".join(found[:2])


def shown_numbers(results: Sequence[ResultRecord]) -> ShownNumbers:
    """What the Space shows of a submission, computed from the fields the spot check compares only
    (tests/leaderboard/checks/test_compared_fields.py); a number added to the detail is added here.

    Args:
        results: one model's result records (the first one's model key names the model).

    Returns:
        Its leaderboard row (keys `evaluator.report.LEADERBOARD_COLUMNS`) and its model detail
        (statement accuracy, failure causes by category, the overall accuracy's interval).

    Raises:
        ValueError: a record is not reportable (e.g. a failed statement without a cause, a sample
            index out of range).
    """
    from evaluator.report import failure_causes, leaderboard_row, overall_interval, statement_accuracy
    from evaluator.report.facts import record_facts

    row = leaderboard_row(results, results[0].model_key)
    facts = record_facts(results)
    detail: ModelDetail = {
        # the report's shares are floats (NaN for a polarity without statements), stored as None: the same keys
        "statement_accuracy": cast(dict[str, EntryStatementAccuracy], statement_accuracy(results, facts=facts)),
        "failure_causes": failure_causes(results)["by_category"],
        "overall_interval": list(overall_interval(results, facts=facts)),
    }
    return ShownNumbers(row, detail)
