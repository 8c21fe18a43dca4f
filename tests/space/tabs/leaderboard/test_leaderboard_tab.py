"""The Leaderboard tab's handlers (`space.tabs.leaderboard.leaderboard_tab`): read again after a submission and on a
timer that runs only while a submission awaits verification; the Hub's widgets hidden while empty;
the filter of entries whose images were not reproduced; an entry's page by its id, with its pairs."""

from __future__ import annotations

import gradio as gr
from PIL import Image

from leaderboard.checks.regeneration_run import thumbnail
from leaderboard.store.entries import RegeneratedPair, Regeneration
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from leaderboard.text.submitted_names import plain_markdown
from space.shared_state import WorkDir
from space.tabs.leaderboard.leaderboard_handlers import LeaderboardHandlers
from space.tabs.leaderboard.leaderboard_tab import build


def entry(name: str, status: str, **fields) -> Entry:
    row = {"overall": 10.0, "coverage": 100.0, "images": 19_200}
    return Entry(
        model_name=name, model_key=name.lower().replace(" ", "_"), submitter="a", status=status, row=row, **fields
    )


def test_the_board_is_read_again_and_its_timer_runs_while_something_awaits(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    on = LeaderboardHandlers(store, WorkDir())
    store.add_submission(entry("Ranked", "verified"))
    *_, awaiting, timer = on.refresh(None)
    assert awaiting["visible"] is False and awaiting["value"].empty  # nothing waits: no empty table drawn
    assert timer.active is False and on.timer_state().active is False
    store.add_submission(entry("Waiting", "validated"))  # what a submission leaves behind
    board, _, picker, awaiting, timer = on.refresh("Ranked")
    assert awaiting["visible"] is True and list(awaiting["value"]["model"]) == ["Waiting"]
    assert timer.active is True and on.timer_state().active is True
    assert picker["value"] == "Ranked" and set(picker["choices"]) == {"Ranked", "Waiting"}  # the pick kept
    assert list(board.data["model"][:1]) == ["Ranked"]  # the board as shown: a Styler over the frame
    on.work_dir.cleanup()


def test_the_yaml_and_file_boxes_are_hidden_without_a_file(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    store.add_submission(entry("Ranked", "verified"))
    on = LeaderboardHandlers(store, WorkDir())
    note, text, path = on.eval_results("Ranked")
    assert note.startswith("No `.eval_results` file: set NEGT2I_HUB_DATASET") and (text, path) == ("", None)
    assert [box["visible"] for box in on.shown_if_filled(text, path)] == [False, False]
    assert [box["visible"] for box in on.shown_if_filled("yaml: 1", "/tmp/negt2ibench.yaml")] == [True, True]


def pairs(own: bool, count: int) -> list[RegeneratedPair]:
    image = Image.new("RGB", (32, 32), (200, 10, 10) if own else (10, 10, 200))
    jpeg = thumbnail(image)
    return [
        RegeneratedPair(
            prompt_id=f"color_pos1_neg0_{k:03d}", sample_index=0, similarity=0.99 if own else 0.05, own=own,
            why="" if own else "similarity 0.05 is below 0.5", submitted_jpeg=jpeg, regenerated_jpeg=jpeg,
        )
        for k in range(count)
    ]  # fmt: skip


def test_the_filter_hides_entries_whose_images_were_not_reproduced_and_the_csv_follows(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    on = LeaderboardHandlers(store, WorkDir())
    store.add_submission(entry("Open", "verified", regeneration=Regeneration(outcome="reproduced", reason="ok")))
    store.add_submission(entry("Closed", "verified"))
    board, csv_path = on.filtered(True)
    assert "Closed" not in set(board.data["model"]) and "Open" in set(board.data["model"])
    assert "Closed" not in open(csv_path, encoding="utf-8").read()
    board, csv_path = on.filtered(False)
    assert "verified · images not reproduced" in set(board.data["status"])
    assert "images not reproduced" in open(csv_path, encoding="utf-8").read()
    assert [type(update).__name__ for update in on.filtered_if(False)] == ["dict", "dict"]  # gr.skip(): as it is
    on.work_dir.cleanup()


def test_an_entrys_page_shows_any_entry_by_its_id_with_its_pairs_side_by_side(tmp_path):
    store = SQLiteStore(tmp_path / "lb.sqlite")
    on = LeaderboardHandlers(store, WorkDir())
    unshown = [pair.model_copy(update={"submitted_jpeg": "", "regenerated_jpeg": ""}) for pair in pairs(False, 32)]
    caught = Regeneration(
        outcome="rejected", reason="regeneration check: 40 of 40 sampled images are not the model's own",
        checked=40, not_own=40, allowed=2,
        pairs=pairs(False, 8) + unshown,
    )  # fmt: skip
    rejected = store.add_submission(
        entry("Best *of* 4", "rejected", regeneration=caught, reason="regeneration check: 40 of 40 ...")
    )
    page, shown = on.entry_details(rejected.submission_id[:8].upper())
    assert shown["visible"] is True
    shown = shown["value"]
    assert page.startswith(f"### Best \\*of\\* 4 (entry {rejected.submission_id[:8]})")  # a name is plain text
    assert "**Status**: " + plain_markdown("rejected: regeneration check: 40 of 40") in page
    assert "The first 8 pairs are below" in page
    assert len(shown) == 8 and shown[0][0].size == (32 + 6 + 32, 32)  # submitted | regenerated
    assert (
        shown[0][1]
        == "color_pos1_neg0_000 sample 0: similarity 0.05, not the model's own: similarity 0.05 is below 0.5"
    )
    assert "no entry" in on.entry_details("0000")[0] and "no entry" in on.entry_details("ffffffffff")[0]
    assert on.entry_details("")[0].startswith("Its id (the Submit tab lists them)")
    assert on.entry_details("")[1] == {"__type__": "update", "value": [], "visible": False}  # no empty gallery
    honest = store.add_submission(
        entry("Honest", "verified", regeneration=Regeneration(outcome="reproduced", reason="ok", pairs=pairs(True, 3)))
    )
    assert len(on.model_pairs("Honest")["value"]) == 3 and on.model_pairs("Honest")["visible"] is True
    assert on.model_pairs("Best *of* 4")["visible"] is False  # not in the picker: no pairs, no frame
    page, _ = on.entry_details(honest.submission_id)
    assert "**Fresh draw**: not done yet; its seed is revealed here once it is." in page
    on.work_dir.cleanup()


def test_the_ranking_plot_and_its_note_stay_mounted_while_hidden(tmp_path):
    # A page load fills the plot and shows it in one update; gradio 6 mounts a visible=False component
    # lazily and can lose that value (the plot stayed an empty frame), so both start and hide as "hidden".
    store = SQLiteStore(tmp_path / "lb.sqlite")
    on = LeaderboardHandlers(store, WorkDir())
    plot, none_ranked = on.ranking()
    assert plot["visible"] is True and plot["value"] is not None  # the paper's rows are plotted
    assert none_ranked["visible"] is True  # nothing verified yet: the note says how to fill the board
    store.add_submission(entry("Ranked", "verified"))
    plot, none_ranked = on.ranking(True)
    assert plot["visible"] is True and none_ranked["visible"] == "hidden"
    with gr.Blocks() as demo:
        build(demo, on)
    named = ("leaderboard-plot", "leaderboard-none")
    built = {block.elem_id: block.visible for block in demo.blocks.values() if block.elem_id in named}
    assert built == dict.fromkeys(named, "hidden")
    on.work_dir.cleanup()
