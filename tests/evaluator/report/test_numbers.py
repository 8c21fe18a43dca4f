"""`evaluator.report.numbers`: the TypedDicts mypy checks the report's readers against have exactly the
keys the aggregation writes, so a key added to one and not the other fails here."""

from __future__ import annotations

from evaluator.report import (
    LEADERBOARD_COLUMNS,
    build_report,
    dead_zone_passes,
    failure_causes,
    leaderboard_row,
    matched_group_deltas,
    statement_accuracy,
    table3,
)
from evaluator.report.numbers import (
    DeadZoneRow,
    FailureCauses,
    LeaderboardRow,
    MatchedDelta,
    OtsStatistics,
    StatementAccuracy,
    Table3Numbers,
)
from tests.helpers.report_helpers import hand_results


def _keys(shape) -> list[str]:
    return list(shape.__annotations__)


def test_the_leaderboard_row_is_table3s_columns_in_their_order():
    assert tuple(_keys(LeaderboardRow)) == LEADERBOARD_COLUMNS
    records = [r for r in hand_results() if r.model_key == "alpha"]
    assert list(leaderboard_row(records, "alpha")) == _keys(LeaderboardRow)


def test_each_number_has_the_keys_its_shape_names():
    records = [r for r in hand_results() if r.model_key == "alpha"]
    assert list(table3(records)["alpha"]) == _keys(Table3Numbers)
    assert {tuple(row) for row in statement_accuracy(records).values()} == {tuple(_keys(StatementAccuracy))}
    assert list(failure_causes(records)) == _keys(FailureCauses)
    assert {tuple(row) for row in dead_zone_passes(records).values()} == {tuple(_keys(DeadZoneRow))}
    deltas = matched_group_deltas(records, n_resamples=10)
    assert {tuple(row) for pairs in deltas.values() for row in pairs.values()} == {tuple(_keys(MatchedDelta))}
    report = build_report(hand_results(), n_resamples=10)
    assert all(list(numbers) == _keys(Table3Numbers) for numbers in report.table3.values())
    assert all(list(numbers) == _keys(OtsStatistics) for numbers in report.ots.values())
