"""The Leaderboard tab's handlers (`space.tabs.leaderboard`): read again after a submission and on a
timer that runs only while a submission awaits verification; the Hub's widgets hidden while empty."""

from __future__ import annotations

from leaderboard.store import Entry, SQLiteStore
from space.handlers import WorkDir
from space.tabs.leaderboard import LeaderboardHandlers


def entry(name: str, status: str) -> Entry:
    row = {"overall": 10.0, "coverage": 100.0, "images": 19_200}
    return Entry(model_name=name, model_key=name.lower(), submitter="a", status=status, row=row)


def test_the_board_is_read_again_and_its_timer_runs_while_something_awaits(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    on = LeaderboardHandlers(store, WorkDir())
    store.add_submission(entry("Ranked", "verified"))
    *_, awaiting, timer = on.refresh(None)
    assert awaiting.empty and timer.active is False and on.timer_state().active is False
    store.add_submission(entry("Waiting", "validated"))  # what a submission leaves behind
    board, _, picker, awaiting, timer = on.refresh("Ranked")
    assert list(awaiting["model"]) == ["Waiting"] and timer.active is True and on.timer_state().active is True
    assert picker["value"] == "Ranked" and set(picker["choices"]) == {"Ranked", "Waiting"}  # the pick kept
    assert list(board["model"][:1]) == ["Ranked"]
    on.work_dir.cleanup()


def test_the_yaml_and_file_boxes_are_hidden_without_a_file(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    store.add_submission(entry("Ranked", "verified"))
    on = LeaderboardHandlers(store, WorkDir())
    note, text, path = on.eval_results("Ranked")
    assert note.startswith("No `.eval_results` file: set NEGT2I_HUB_DATASET") and (text, path) == ("", None)
    assert [box["visible"] for box in on.shown_if_filled(text, path)] == [False, False]
    assert [box["visible"] for box in on.shown_if_filled("yaml: 1", "/tmp/negt2ibench.yaml")] == [True, True]
