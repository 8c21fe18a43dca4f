"""The Space's pure views, its GPU scorer over a given evaluator, and its temporary folder (no launch)."""

from __future__ import annotations

import pandas as pd
from PIL import Image

from dataset_builder.loading import load_prompts
from evaluator.config import PRESETS
from evaluator.report import LEADERBOARD_COLUMNS, SETTING_LABELS, TABLE3_CATEGORIES, TABLE3_COLUMNS
from leaderboard.store.ranking import PAPER_CITATION, PAPER_ROWS, REPORTED
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from negt2ibench.api import Evaluator
from space.app import build_app
from space.gpu_calls import gpu_scorer
from space.leaderboard_view import LEADERBOARD_TABLE_COLUMNS, PAPER_ROWS_NOTE, leaderboard_table
from space.views import error_markdown, verdict_frame
from tests.helpers.space_helpers import RectanglePerception, scene_png


def test_the_leaderboard_leads_with_the_ranking_then_table3s_columns():
    keys = [column.key for column in LEADERBOARD_TABLE_COLUMNS]
    assert keys[:6] == ["rank", "model", "overall", "overall_ci", "polarity_gap", "status"]
    assert keys[6:] == ["fresh", "fresh_gap", *TABLE3_CATEGORIES, *SETTING_LABELS, "coverage", "images", "link"]
    shared = {column.key: column for column in LEADERBOARD_TABLE_COLUMNS if column.key in LEADERBOARD_COLUMNS}
    assert shared == {column.key: column for column in TABLE3_COLUMNS if column.key in LEADERBOARD_COLUMNS}
    row = {key: 1.0 for key in LEADERBOARD_COLUMNS} | {"model": "m", "coverage": 100.0, "extra": "dropped"}
    entry = Entry(model_name="M", model_key="m", submitter="a", created_at=1, status="verified", row=row, link="x")
    table = leaderboard_table([entry])
    assert table.rows[0]["model"] == "M" and "extra" not in table.rows[0]
    assert table.rows[0]["status"] == "verified · images not reproduced"  # no regeneration check ran for it
    assert len(table.rows) == 1 + len(PAPER_ROWS) and table.rows[-1]["coverage"] is None  # the paper gives none
    waiting = entry.model_copy(update={"status": "pending", "submission_id": "0" * 32, "model_key": "w"})
    assert len(leaderboard_table([waiting]).rows) == len(PAPER_ROWS)  # pending: never ranked


def test_paper_rows_cite_the_paper_and_say_they_are_another_corpus_draw():
    paper = [row for row in leaderboard_table([]).rows if row["status"] == REPORTED]
    assert [row["model"] for row in paper] == ["SD 1.5", "SD 1.5 + NegationCLIP"]
    assert {row["link"] for row in paper} == {"Elfatairy, Bravo, Bader, Akata (2026), NegT2IBench, Table 3"}
    assert "http" not in PAPER_CITATION  # no invented address
    assert "paper's own draw of the corpus, not on this corpus (version 2" in PAPER_ROWS_NOTE


def test_the_gpu_scorer_uses_the_evaluator_it_was_given(tmp_path):
    prompt = next(
        p for p in load_prompts(None) if p.prompt_id == "directional_pos1_neg0_003"
    )  # motorcycle left of bowl
    doubles = RectanglePerception(), RectanglePerception(absent=prompt.objects[:1])
    scorers = [gpu_scorer(Evaluator(PRESETS["current"], perception=double)) for double in doubles]
    image = Image.open(scene_png(tmp_path / "scene.png"))
    (found, annotated), (missing, _) = (scorer(image, prompt, "upload", 0) for scorer in scorers)
    assert (found.passed, missing.passed) == (True, False) and [d.calls for d in doubles] == [1, 1]
    assert isinstance(annotated, Image.Image) and annotated.size == image.size


def test_the_temporary_folder_goes_when_the_app_closes(tmp_path):
    demo = build_app(
        prompts=load_prompts(None)[:10], store=SQLiteStore(tmp_path / "lb.sqlite"), perception=RectanglePerception()
    )
    folder = demo.work_dir.path
    assert folder.is_dir() and folder.name.startswith("negt2i_space_")
    (folder / "negt2ibench_leaderboard.csv").write_text("model\n")
    demo.close()
    assert not folder.exists()
    assert demo.work_dir.path.is_dir() and demo.work_dir.path != folder  # a reopened app gets a new one
    demo.close()


def test_error_markdown_and_empty_verdict_frame():
    assert error_markdown("one line") == "**Error:** one line"
    # further lines are an indented code block: nothing in them is Markdown or HTML
    assert error_markdown("first\nsecond\n```\n<b>x</b>") == "**Error:** first\n\n    second\n    ```\n    <b>x</b>"
    # the first line is plain text, and quotes at most a few hundred characters of a long input
    assert error_markdown("bad [x](http://e.vil) **b** `c`") == (
        "**Error:** bad \\[x\\]\\(http\\:\\/\\/e\\.vil\\) \\*\\*b\\*\\* \\`c\\`"
    )
    long = error_markdown("cannot parse: " + "x" * 1_000_000)
    assert len(long) < 700 and long.endswith("\\(1\\,000\\,014 characters\\)")
    empty = verdict_frame(None, None)
    assert isinstance(empty, pd.DataFrame) and empty.empty and list(empty.columns)[:2] == ["item", "text"]


def figure_texts(figure) -> list[str]:
    """Every text drawn in a matplotlib figure: its axes' titles and texts."""
    texts = []
    for axis in figure.axes:
        texts += [axis.get_title(), *(text.get_text() for text in axis.texts)]
    return texts


def test_numbers_that_are_not_verified_say_so_where_they_are_drawn():
    """A pending entry whose detail draws its claimed 100%: its plot and its causes table
    say "claimed, not verified" in themselves, for every status but verified."""
    import matplotlib.pyplot as plt

    from evaluator.results import ResultRecord
    from leaderboard.checks.compared_fields import shown_numbers
    from leaderboard.store.ranking import UNVERIFIED
    from space.leaderboard_view import causes_frame, polarity_figure
    from tests.helpers.space_helpers import result_line

    prompts = load_prompts(None)[::100]
    records = [ResultRecord.model_validate(result_line(p, 0, "toy", passed=True)) for p in prompts]
    records += [ResultRecord.model_validate(result_line(p, 1, "toy", passed=False)) for p in prompts]
    row, detail = shown_numbers(records)
    for status in ("received", "validated", "pending", "held", "verified"):
        entry = Entry(model_name="Claims", model_key="claims", submitter="a", status=status, row=row, detail=detail)
        figure = polarity_figure(entry)
        marked = [text for text in figure_texts(figure) if UNVERIFIED in text]
        causes = causes_frame(entry)
        assert not causes.empty
        if status == "verified":
            assert marked == [] and not causes["category"].str.contains(UNVERIFIED, regex=False).any()
        else:
            assert len(marked) == 2, status  # the title and the watermark across the bars
            assert causes["category"].str.endswith(f"({UNVERIFIED})").all()
        plt.close(figure)


def test_the_submit_tab_says_each_status_once_and_the_reason_only_when_it_adds_something():
    from space.views import submission_message

    stored = Entry(
        model_name="Toy *Model*",
        model_key="toy_model",
        submitter="a",
        submission_id="abcdef0123456789",
        status="validated",
        reason="validated; its spot check comes next",
    )
    assert submission_message(stored) == (
        "**Toy \\*Model\\***: status **validated**: stored and its file checked; the spot check runs next, as a "
        "verification job: refresh the list below to follow it (id `abcdef01`)."
    )
    rejected = stored.model_copy(update={"status": "rejected", "reason": "inconsistent results: no cause"})
    assert submission_message(rejected) == (
        "**Toy \\*Model\\***: status **rejected**: stored but not ranked; it counts toward the daily limit "
        "(id `abcdef01`). Why: inconsistent results\\: no cause."
    )


def test_the_grammar_is_a_markdown_list_of_the_cli_grammars_words():
    from dataset_builder.grammar import GRAMMAR_HELP
    from space.views import grammar_markdown

    lines = grammar_markdown().splitlines()
    assert lines[:2] == ["Prompts follow the benchmark's grammar (lower case, one category per prompt):", ""]
    assert lines[2].startswith("- attributes (color: red orange") and lines[3] == "    - `a photo of a red cup`"
    assert [line for line in lines if line.startswith("- ")][-1].startswith("- objects are the 79 COCO classes")
    examples = [line.strip()[3:-1] for line in lines if line.startswith("    - ")]
    assert len(examples) == 6 and all(example in " ".join(GRAMMAR_HELP.split()) for example in examples)


def test_a_stand_ins_verdict_says_whose_it_is_and_missing_weights_say_how_to_get_them():
    from space.views import verdict_summary, weights_missing

    prompt = next(p for p in load_prompts(None) if p.prompt_id == "color_pos1_neg0_000")
    result = gpu_scorer(Evaluator(PRESETS["current"], perception=RectanglePerception()))(
        Image.new("RGB", (64, 64)), prompt, "upload", 0
    )[0]
    marked = verdict_summary(prompt, result, stand_in="RectanglePerception")
    assert marked.endswith(
        "\n\n**Not the evaluator's models:** verdicts here come from RectanglePerception, a test double this app "
        "was built with in its models' place; they say nothing about what the models would see."
    )
    assert "Not the evaluator's models" not in verdict_summary(prompt, result)
    assert weights_missing("RF-DETR Seg XL and SAM 2.1") == (
        "Scoring needs the evaluator's model weights (RF\\-DETR Seg XL and SAM 2\\.1), and they are not on this "
        "machine. Fetch them once with `negt2ibench download-models` (it needs internet access), then start this app "
        "again, or start it with `negt2ibench serve --weights-dir DIR` on a folder that `download-models --dir DIR` "
        "filled."
    )


def test_the_job_cell_shows_each_state_its_logs_link_and_last_error_as_text():
    from leaderboard.store.sqlite_store import JobRecord
    from space.views import SUBMISSION_COLUMNS, SUBMISSION_TYPES, job_cell, submissions_frame

    def cell(**job) -> str:
        return job_cell(Entry(model_name="M", model_key="m", submitter="a", job=JobRecord(**job)))

    assert job_cell(Entry(model_name="M", model_key="m", submitter="a")) == ""
    assert cell(backend="none", message="a maintainer runs it") == "none\\: a maintainer runs it"
    url = "https://huggingface.co/jobs/owner/68a1"
    assert cell(backend="hf-jobs", job_id="68a1", stage="RUNNING", url=url, launches=[1.0]) == (
        f"hf\\-jobs RUNNING · [logs]({url})"
    )
    failed = cell(
        backend="hf-jobs", job_id="68a2", stage="ERROR", url=url + ") [x](https://e.vil", launches=[1.0, 2.0],
        message="exit code 1", last_error="error: <img src=x> [y](https://e.vil)",
    )  # fmt: skip
    assert failed.startswith("hf\\-jobs ERROR · launch 2 · exit code 1 · logs: https\\:")  # not a link: text
    assert "<img" not in failed and "](" not in failed and "last error: error\\: &lt;img" in failed
    local = cell(backend="local", job_id="local-1", stage="COMPLETED", url="/tmp/logs/local-1.log", launches=[1.0])
    assert local == "local COMPLETED · logs: \\/tmp\\/logs\\/local\\-1\\.log"
    assert SUBMISSION_TYPES[SUBMISSION_COLUMNS.index("verification job")] == "markdown"
    assert set(SUBMISSION_TYPES) == {"str", "markdown"} and SUBMISSION_TYPES.count("markdown") == 1
    frame = submissions_frame([Entry(model_name="M", model_key="m", submitter="a")])
    assert list(frame.columns) == SUBMISSION_COLUMNS
