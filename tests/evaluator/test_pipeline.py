"""The scoring pipeline end to end on tiny random models: sources, error rows, resume, batching, ranks."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from dataset_builder.layout import rank_path
from evaluator.config import PRESETS
from evaluator.images import ImageError
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.pipeline import resolve_source, score_image, score_images
from evaluator.resultio import read_results
from evaluator.results import ResultRecord
from negt2ibench.core.errors import UserError
from tests.helpers.launch_helpers import FakeState
from tests.helpers.perception_helpers import make_prompt, random_image, tiny_perception

CONFIG = PRESETS["current"]
PROMPTS = [
    make_prompt("color", ["tv remote", "cup"], "color_pos1_neg0_000"),
    make_prompt("proximity", ["car", "bus"], "proximity_pos1_neg0_000"),
    make_prompt("depth", ["dog", "cat"], "depth_pos0_neg1_000", polarity="negated"),
]


def write_folder(folder: Path, samples: int = 2) -> list[tuple[str, int]]:
    folder.mkdir(parents=True, exist_ok=True)
    keys = []
    for number, prompt in enumerate(PROMPTS):
        for sample in range(samples):
            random_image(100 + 10 * number + sample, (96, 72)).save(folder / f"{prompt.prompt_id}_{sample}.png")
            keys.append((prompt.prompt_id, sample))
    return keys


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.mark.slow
def test_folder_end_to_end_gives_valid_records_and_error_rows(tmp_path):
    keys = write_folder(tmp_path / "imgs", samples=1)
    (tmp_path / "imgs" / "color_pos1_neg0_000_1.png").write_bytes(b"corrupt")
    Image.new("RGB", (20, 20)).save(tmp_path / "imgs" / "proximity_pos1_neg0_000_1.png")  # too small
    data = png(random_image(5))
    (tmp_path / "imgs" / "depth_pos0_neg1_000_1.png").write_bytes(data[: len(data) // 2])  # truncated
    random_image(6).save(tmp_path / "imgs" / "material_pos1_neg0_000_0.png")  # prompt id not in the records
    (tmp_path / "imgs" / "notes.txt").write_text("ignored")
    out = tmp_path / "results.jsonl"

    summary = score_images(
        tmp_path / "imgs",
        PROMPTS,
        tiny_perception(),
        out_path=out,
        config=CONFIG,
        model_key="tiny",
        batch_size=4,
        progress=False,
    )

    records = read_results(out)
    assert len(records) == 7 and summary.total == 7
    assert {record.key for record in records} == {("tiny", p, s) for p, s in keys} | {
        ("tiny", "color_pos1_neg0_000", 1),
        ("tiny", "proximity_pos1_neg0_000", 1),
        ("tiny", "depth_pos0_neg1_000", 1),
        ("tiny", "material_pos1_neg0_000", 0),
    }
    errors = {record.prompt_id + f"_{record.sample_index}": record.error for record in records if record.error}
    assert set(errors) == {
        "color_pos1_neg0_000_1",
        "proximity_pos1_neg0_000_1",
        "depth_pos0_neg1_000_1",
        "material_pos1_neg0_000_0",
    }
    assert "too small" in errors["proximity_pos1_neg0_000_1"]
    assert errors["color_pos1_neg0_000_1"] == "bad image: not a recognised image format (corrupt or not an image)"
    assert errors["depth_pos0_neg1_000_1"].startswith("bad image: corrupt or truncated image")
    assert errors["material_pos1_neg0_000_0"].startswith("unknown prompt id")
    assert (
        summary.errors == 4
        and summary.scored == 3
        and summary.error_reasons == {"bad image": 3, "unknown prompt id": 1}
    )
    by_id = {prompt.prompt_id: prompt for prompt in PROMPTS}
    for record in records:
        assert record.evaluator_version and record.config_hash == CONFIG.config_hash
        if record.error is None:
            prompt = by_id[record.prompt_id]
            assert [obj.name for obj in record.objects] == prompt.objects
            assert len(record.statements) == len(prompt.statements)
            assert record.passed == (
                all(o.present for o in record.objects) and all(s.satisfied for s in record.statements)
            )
        else:
            assert not record.passed and record.statements == []


class InterruptingPerception:
    """Wraps a perception; raises KeyboardInterrupt on the call after `allowed` calls."""

    def __init__(self, inner, allowed: int):
        self.inner, self.allowed, self.calls, self.images_seen = inner, allowed, 0, 0

    def observe(self, images, prompts):
        if self.calls >= self.allowed:
            raise KeyboardInterrupt
        self.calls += 1
        self.images_seen += len(images)
        return self.inner.observe(images, prompts)


@pytest.mark.slow
def test_resume_after_interruption_scores_only_the_rest(tmp_path):
    keys = write_folder(tmp_path / "imgs", samples=2)
    out = tmp_path / "results.jsonl"
    perception = tiny_perception()
    interrupted = InterruptingPerception(perception, allowed=1)
    with pytest.raises(KeyboardInterrupt):
        score_images(
            tmp_path / "imgs",
            PROMPTS,
            interrupted,
            out_path=out,
            config=CONFIG,
            model_key="tiny",
            batch_size=2,
            progress=False,
        )
    first = read_results(out)
    assert len(first) == 2

    resumed = InterruptingPerception(perception, allowed=100)
    summary = score_images(
        tmp_path / "imgs", PROMPTS, resumed, out_path=out, config=CONFIG, model_key="tiny", batch_size=2, progress=False
    )
    assert summary.already_done == 2 and summary.scored + summary.errors == len(keys) - 2
    assert resumed.images_seen == len(keys) - 2
    records = read_results(out)
    assert sorted(record.key for record in records) == sorted(("tiny", p, s) for p, s in keys)
    assert records[:2] == first  # earlier rows untouched

    again = score_images(
        tmp_path / "imgs",
        PROMPTS,
        InterruptingPerception(perception, allowed=0),
        out_path=out,
        config=CONFIG,
        model_key="tiny",
        batch_size=2,
        progress=False,
    )
    assert again.already_done == len(keys) and len(read_results(out)) == len(keys)


def _by_key(path: Path) -> dict:
    return {record.key: record for record in read_results(path)}


@pytest.mark.slow
def test_batched_run_equals_unbatched_run(tmp_path):
    write_folder(tmp_path / "imgs", samples=1)
    perception = tiny_perception()
    score_images(
        tmp_path / "imgs",
        PROMPTS,
        perception,
        out_path=tmp_path / "b1.jsonl",
        config=CONFIG,
        model_key="tiny",
        batch_size=1,
        progress=False,
    )
    score_images(
        tmp_path / "imgs",
        PROMPTS,
        perception,
        out_path=tmp_path / "b3.jsonl",
        config=CONFIG,
        model_key="tiny",
        batch_size=3,
        progress=False,
    )
    one, three = _by_key(tmp_path / "b1.jsonl"), _by_key(tmp_path / "b3.jsonl")
    assert set(one) == set(three)
    for key in one:
        a, b = one[key], three[key]
        assert (a.passed, [s.satisfied for s in a.statements], [o.present for o in a.objects]) == (
            b.passed,
            [s.satisfied for s in b.statements],
            [o.present for o in b.objects],
        )
        for x, y in zip(a.objects, b.objects, strict=False):
            assert x.confidence == pytest.approx(y.confidence, abs=1e-5)


@pytest.mark.slow
def test_local_dataset_split_source(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [
        {"prompt_id": prompt.prompt_id, "sample_index": 0, "image": {"bytes": png(random_image(i)), "path": None}}
        for i, prompt in enumerate(PROMPTS)
    ]
    rows.append({"prompt_id": PROMPTS[0].prompt_id, "sample_index": 1, "image": {"bytes": b"broken", "path": None}})
    (tmp_path / "data" / "images").mkdir(parents=True)
    table = pa.Table.from_pylist(rows)
    pq.write_table(table.slice(0, 2), tmp_path / "data" / "images" / "tiny_model-r000-00000.parquet", row_group_size=1)
    pq.write_table(table.slice(2), tmp_path / "data" / "images" / "tiny_model-r000-00001.parquet")
    pq.write_table(table.slice(0, 1), tmp_path / "data" / "images" / "other-r000-00000.parquet")

    with pytest.raises(UserError, match="--split"):
        resolve_source(tmp_path / "data")
    items, key = resolve_source(tmp_path / "data", split="tiny_model")
    assert key == "tiny_model" and [(i.prompt_id, i.sample_index) for i in items] == [
        (r["prompt_id"], r["sample_index"]) for r in rows
    ]
    out = tmp_path / "r.jsonl"
    summary = score_images(
        tmp_path / "data",
        PROMPTS,
        tiny_perception(),
        out_path=out,
        config=CONFIG,
        split="tiny_model",
        progress=False,
        limit=3,
    )
    records = read_results(out)
    assert summary.total == 3 and len(records) == 3 and {r.model_key for r in records} == {"tiny_model"}
    score_images(
        tmp_path / "data", PROMPTS, tiny_perception(), out_path=out, config=CONFIG, split="tiny_model", progress=False
    )
    records = read_results(out)
    assert len(records) == 4 and sum(r.error is not None for r in records) == 1


def test_single_image_source_and_bad_sources(tmp_path):
    random_image(1).save(tmp_path / "photo.png")
    items, key = resolve_source(tmp_path / "photo.png", prompt_id=PROMPTS[1].prompt_id)
    assert key == "upload" and [(i.prompt_id, i.sample_index) for i in items] == [(PROMPTS[1].prompt_id, 0)]
    with pytest.raises(UserError, match="--prompt-id"):
        resolve_source(tmp_path / "photo.png")
    with pytest.raises(UserError, match="no such"):
        resolve_source(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="no images"):
        resolve_source(tmp_path / "empty")
    with pytest.raises(UserError, match="model key"):
        score_images(
            tmp_path / "photo.png",
            PROMPTS,
            tiny_perception(),
            out_path=tmp_path / "o.jsonl",
            config=CONFIG,
            model_key="Bad Key",
            prompt_id=PROMPTS[1].prompt_id,
            progress=False,
        )


@pytest.mark.slow
def test_score_image_returns_record_and_observation():
    record, observation = score_image(
        png(random_image(3)), PROMPTS[0], tiny_perception(), config=CONFIG, model_key="upload", sample_index=2
    )
    assert isinstance(record, ResultRecord) and isinstance(observation, ImageObservation)
    assert record.key == ("upload", PROMPTS[0].prompt_id, 2) and set(observation.objects) == set(PROMPTS[0].objects)
    with pytest.raises(ImageError):
        score_image(b"nope", PROMPTS[0], tiny_perception(), config=CONFIG)


class FlakyPerception:
    """Sees both objects as two side-by-side boxes; fails on images whose top-left pixel is pure red."""

    def observe(self, images, prompts):
        observations = []
        for image, prompt in zip(images, prompts, strict=False):
            if image.getpixel((0, 0)) == (255, 0, 0):
                raise RuntimeError("model crashed on this image")
            width, height = image.size
            objects = {}
            for number, name in enumerate(prompt.objects):
                mask = np.zeros((height, width), dtype=bool)
                mask[10:30, 5 + 40 * number : 25 + 40 * number] = True
                objects[name] = ObjectObservation(
                    name=name, present=True, confidence=0.9, box=(5 + 40 * number, 10, 25 + 40 * number, 30), mask=mask
                )
            observations.append(ImageObservation(width=width, height=height, objects=objects))
        return observations


def test_a_perception_failure_becomes_one_error_row_and_the_batch_goes_on(tmp_path):
    folder = tmp_path / "imgs"
    folder.mkdir()
    prompt = PROMPTS[1]
    for sample in range(3):
        image = Image.new("RGB", (96, 64), (255, 0, 0) if sample == 1 else (0, 0, 255))
        image.save(folder / f"{prompt.prompt_id}_{sample}.png")
    out = tmp_path / "r.jsonl"
    summary = score_images(
        folder, [prompt], FlakyPerception(), out_path=out, config=CONFIG, batch_size=3, model_key="m", progress=False
    )
    records = {record.sample_index: record for record in read_results(out)}
    assert records[1].error.startswith("perception failed: RuntimeError")
    assert records[0].error is None and records[2].error is None
    assert summary.errors == 1 and summary.scored == 2


def test_ranks_write_their_own_files_and_the_main_process_merges_without_duplicates(tmp_path, monkeypatch):
    import accelerate

    keys = write_folder(tmp_path / "imgs", samples=2)
    out = tmp_path / "results.jsonl"
    for rank in (1, 0):  # rank 0 (main) runs last and merges
        monkeypatch.setattr(accelerate, "PartialState", lambda rank=rank: FakeState(rank))
        score_images(
            tmp_path / "imgs",
            PROMPTS,
            FlakyPerception(),
            out_path=out,
            config=CONFIG,
            model_key="m",
            batch_size=2,
            progress=False,
        )
    assert rank_path(out, 1) == tmp_path / "results.rank1.jsonl"
    assert len(read_results(rank_path(out, 0))) == 3 and len(read_results(rank_path(out, 1))) == 3
    merged = read_results(out)
    assert sorted(record.key for record in merged) == sorted(("m", p, s) for p, s in keys)
    # Rerun: every key is already merged, so no rank scores anything and the merge stays duplicate-free.
    for rank in (1, 0):
        monkeypatch.setattr(accelerate, "PartialState", lambda rank=rank: FakeState(rank))
        summary = score_images(
            tmp_path / "imgs",
            PROMPTS,
            FlakyPerception(),
            out_path=out,
            config=CONFIG,
            model_key="m",
            batch_size=2,
            progress=False,
        )
        assert summary.scored == 0
    assert len(read_results(out)) == len(keys)
    assert all(json.loads(line) for line in out.read_text().splitlines())


def test_hub_dataset_source_reads_undecoded_bytes(monkeypatch, tmp_path):
    import datasets

    rows = {
        "prompt_id": [PROMPTS[0].prompt_id, PROMPTS[1].prompt_id],
        "sample_index": [0, 3],
        "image": [{"bytes": png(random_image(1)), "path": None}, {"bytes": b"junk", "path": None}],
    }
    local = datasets.Dataset.from_dict(
        rows,
        features=datasets.Features(
            {"prompt_id": datasets.Value("string"), "sample_index": datasets.Value("int32"), "image": datasets.Image()}
        ),
    )
    calls = []

    def fake_load_dataset(repo_id, config_name, split):
        calls.append((repo_id, config_name, split))
        return local

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    with pytest.raises(UserError, match="--split"):
        resolve_source("someone/negt2ibench")
    items, key = resolve_source("someone/negt2ibench", split="sd_1_5")
    assert calls == [("someone/negt2ibench", "images", "sd_1_5")] and key == "sd_1_5"
    assert [(item.prompt_id, item.sample_index) for item in items] == [
        (PROMPTS[0].prompt_id, 0),
        (PROMPTS[1].prompt_id, 3),
    ]
    assert items[0].fetch()[:8] == b"\x89PNG\r\n\x1a\n" and items[1].fetch() == b"junk"


def test_annotate_draws_masks_boxes_labels_and_the_statement_table():
    from evaluator.annotate import annotate, statement_table
    from evaluator.verdict import decide_statements

    image = Image.new("RGB", (120, 80), (128, 128, 128))
    observation = FlakyPerception().observe([image], [PROMPTS[1]])[0]
    record = decide_statements(PROMPTS[1], observation, model_key="m", sample_index=0, config=CONFIG)
    drawn = np.asarray(annotate(image, observation, record)).astype(int)
    original = np.asarray(image).astype(int)
    assert drawn.shape == original.shape
    assert np.abs(drawn[20, 15] - original[20, 15]).sum() > 30  # inside the first mask: tinted
    assert np.abs(drawn[70, 110] - original[70, 110]).sum() == 0  # far from every object: untouched
    rows = statement_table(PROMPTS[1], record)
    assert [row["index"] for row in rows] == [0]
    assert rows[0]["statement"] == PROMPTS[1].statements[0].text and rows[0]["polarity"] == "positive"
    # The double's boxes are 20 px apart: farther than "near" allows for two 20 × 20 px objects.
    assert (rows[0]["verdict"], rows[0]["observed"]) == ("fail", "far from")
    assert rows[0]["measurements"].startswith("gap=20; touching=False;")
    empty = annotate(image, ImageObservation(width=120, height=80))
    assert np.array_equal(np.asarray(empty), np.asarray(image))


@pytest.mark.parametrize("passed, channel", [(False, 0), (True, 1)])
def test_the_verdict_banner_is_red_for_fail_and_green_for_pass(passed, channel):
    from evaluator.annotate import annotate
    from evaluator.verdict import error_record

    image = Image.new("RGB", (200, 120), (128, 128, 128))
    record = error_record(PROMPTS[1].prompt_id, "m", 0, "x").model_copy(update={"passed": passed, "error": None})
    drawn = np.asarray(annotate(image, ImageObservation(width=200, height=120), record)).astype(int)
    banner = drawn[:40, :120][np.abs(drawn[:40, :120] - 128).sum(axis=-1) > 60]  # the banner's pixels
    assert len(banner) > 100
    # supervision's RED is (255, 0, 0) and GREEN (0, 255, 0) in RGB: the banner must be that, not BGR-swapped
    assert np.median(banner[:, channel]) > 150 and np.median(banner[:, 2]) < 100


def test_summary_line_names_the_rank_file_under_a_launcher(tmp_path):
    from dataset_builder.layout import rank_path
    from evaluator.pipeline import ScoreSummary

    out = tmp_path / "results.jsonl"
    alone = ScoreSummary(out_path=out, total=4, scored=3, passed=1, errors=1).line()
    assert alone.startswith("4 new rows (3 scored, 1 passed, 1 errors)") and alone.endswith(f"→ {out}")
    shared = ScoreSummary(out_path=out, total=4, scored=2, rank=1, world=2).line()
    assert shared.startswith("[rank 1/2] 2 new rows") and f"{rank_path(out, 1).name}, merged into {out}" in shared
    timed = ScoreSummary(out_path=out, total=4, scored=3, errors=1, seconds=8.0).line()
    assert ", 4 in source, 2.00 s/image →" in timed  # 8 s over the 4 new rows, error rows counted
    assert "s/image" not in ScoreSummary(out_path=out, total=4, already_done=4, seconds=1.0).line()
    assert "1.50 s/image" in ScoreSummary(out_path=out, total=2, scored=1, errors=1, seconds=3.0).line()
