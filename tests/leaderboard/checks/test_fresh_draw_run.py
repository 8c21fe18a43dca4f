"""The fresh draw run by `verify-job --fresh-draw` (`leaderboard.checks.fresh_draw_run`) on a tiny random pipeline on
the CPU: a verified entry whose images were reproduced gets the fresh-draw accuracy beside its public
one, with both intervals, the gap and the seed, once; the work folder does not name the seed; an
entry whose images were not reproduced gets no draw."""

from __future__ import annotations

import json

import pytest

from dataset_builder.vocabulary import CATEGORIES, SETTINGS
from leaderboard.checks.fresh_draw_policy import fresh_seed
from tests.helpers.regen_helpers import SECRET, regen_world, stored, verify

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return regen_world(tmp_path_factory.mktemp("fresh"))


def test_a_reproduced_entry_gets_its_fresh_draw_once(world, tmp_path):
    store, entry = stored(world, tmp_path, "honest")
    verified = verify(world, tmp_path, store, entry)
    assert verified.status == "verified" and verified.regeneration.outcome == "reproduced"
    assert verified.fresh_draw is None
    said: list[str] = []
    done = verify(world, tmp_path, store, entry, mode="fresh", fresh_per_cell=1, said=said)
    draw = done.fresh_draw
    cells = len(CATEGORIES) * len(SETTINGS)
    assert draw is not None and (draw.prompts, draw.images) == (cells, 4 * cells)
    assert draw.seed == fresh_seed(SECRET, entry.submission_id)  # revealed: anyone can repeat it
    assert "fresh draw 192 images x 0.01 s" in said[0] and "re-score 192 images" in said[0]  # its plan, first
    kept = next((tmp_path / "work").glob(f"{entry.submission_id}.fresh.*.jsonl"))
    records = [json.loads(line) for line in kept.read_text().splitlines()]
    scored = [r for r in records if r["error"] is None]
    assert len(records) == 192 and draw.accuracy == pytest.approx(
        100 * sum(r["passed"] for r in scored) / len(scored), abs=0.01
    )
    assert {r["prompt_id"].split("_")[0] for r in records} == {"fresh"}
    public = store.get_results(entry.submission_id)
    assert draw.public == pytest.approx(100 * sum(r.passed for r in public) / len(public), abs=0.01)
    assert draw.gap == pytest.approx(draw.accuracy - draw.public, abs=0.02)
    assert draw.interval[0] <= draw.accuracy <= draw.interval[1]
    assert draw.gap_interval[0] <= draw.gap <= draw.gap_interval[1]
    numbers = [draw.accuracy, *draw.interval, draw.public, *draw.public_interval, draw.gap, *draw.gap_interval]
    assert [round(number, 2) for number in numbers] == numbers  # each kept to 2 decimals, as the entry page shows
    assert said[-1].startswith(f"{entry.submission_id[:8]}  honest: fresh draw (seed {draw.seed}, 48 prompts")
    assert not [path for path in (tmp_path / "work").rglob("*") if str(draw.seed) in path.name]
    again: list[str] = []
    assert verify(world, tmp_path, store, entry, mode="fresh", fresh_per_cell=1, said=again).fresh_draw == draw
    assert again == [f"{entry.submission_id[:8]}  honest: no fresh draw due: it is verified ({done.reason})"]


def test_an_entry_whose_images_were_not_reproduced_gets_no_fresh_draw(world, tmp_path):
    store, entry = stored(world, tmp_path, "honest")
    verified = verify(world, tmp_path, store, entry, load=None)  # a run without the generation step
    assert verified.status == "verified" and verified.regeneration.outcome == "not_reproduced"
    said: list[str] = []
    assert verify(world, tmp_path, store, entry, mode="fresh", said=said).fresh_draw is None
    assert said[0].endswith(f"no fresh draw due: it is verified ({verified.reason})")
