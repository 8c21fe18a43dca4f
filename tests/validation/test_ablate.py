"""`negt2ibench ablate` (paper Table 17) on tiny random models, offline: perception once per
detector × SAM pair, the rules once per preset, one table row per configuration."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest

from evaluator.config import PRESETS
from evaluator.resultio import read_results
from negt2ibench.cli import main
from tests.helpers.perception_helpers import make_prompt, random_image, replace_model_perception, tiny_perception
from tests.helpers.validation_helpers import annotation, write_jsonl
from validation.ablate import perception_groups, run_ablation
from validation.annotations import read_annotations
from validation.labels import build_labels

PROMPTS = [
    make_prompt("proximity", ["cup", "cat"], "proximity_pos0_neg1_000", polarity="negated"),
    make_prompt("color", ["dog"], "color_pos1_neg0_000"),
    make_prompt("depth", ["bench", "bowl"], "depth_pos1_neg0_000"),
    make_prompt("directional", ["car", "bus"], "directional_pos1_neg0_000"),
]
BY_ID = {p.prompt_id: p for p in PROMPTS}
TABLE17 = [PRESETS[f"c{n}"] for n in range(1, 9)]
SAMPLES = 2


def write_dataset(folder, split: str = "m"):
    """images/<split>-00000-of-00001.parquet with a distinct noisy image per (prompt, sample)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = []
    for number, prompt in enumerate(PROMPTS):
        for sample in range(SAMPLES):
            buffer = io.BytesIO()
            random_image(100 + 10 * number + sample, (80, 64)).save(buffer, format="PNG")
            rows.append((prompt.prompt_id, sample, {"bytes": buffer.getvalue(), "path": None}))
    table = pa.table(
        {
            "prompt_id": [r[0] for r in rows],
            "sample_index": pa.array([r[1] for r in rows], pa.int32()),
            "image": [r[2] for r in rows],
            "model_key": [split] * len(rows),
        }
    )
    (folder / "images").mkdir(parents=True)
    pq.write_table(table, folder / "images" / f"{split}-00000-of-00001.parquet")
    return folder


@pytest.fixture
def study(tmp_path):
    dataset = write_dataset(tmp_path / "data")
    records = []
    for number, prompt in enumerate(PROMPTS):
        for sample in range(SAMPLES):
            passes = [True, (number + sample) % 2 == 0, number % 3 == 0]
            for slot, name in enumerate(("ann", "bob", "cat")):
                records.append(annotation(prompt, name, passes[slot], sample_index=sample, minute=number))
    records.append(annotation(PROMPTS[0], "ann", True, sample_index=7))  # labelled, not in the dataset ...
    records += [annotation(PROMPTS[0], n, True, sample_index=7) for n in ("bob", "cat")]
    records.append(annotation(PROMPTS[1], "ann", False, sample_index=9))  # one annotator only: not used
    annotations = write_jsonl(records, tmp_path / "annotations.jsonl")
    prompts_file = write_jsonl(PROMPTS, tmp_path / "prompts.jsonl")
    return tmp_path, dataset, annotations, prompts_file


class CountingPerception:
    """Tiny real models; counts the images each perception observes (a test double around them)."""

    def __init__(self, config):
        self.config = config
        self.inner = tiny_perception(config)
        self.images = 0

    def observe(self, images, prompts):
        self.images += len(images)
        return self.inner.observe(images, prompts)


def test_configurations_that_differ_only_in_constants_share_a_group():
    groups = perception_groups(TABLE17)
    assert [[c.name for c in group] for group in groups] == [["c1", "c2"], ["c3", "c4"], ["c5", "c6"], ["c7", "c8"]]
    assert [[c.name for c in g] for g in perception_groups([PRESETS["current"], PRESETS["c5"]])] == [["current", "c5"]]


@pytest.mark.slow
def test_perception_does_not_read_the_rules_constants():
    """What makes the grouping right: previous and current constants see the same things."""
    images = [random_image(3), random_image(4)]
    previous = tiny_perception(PRESETS["c5"]).observe(images, PROMPTS[1:3])
    current = tiny_perception(PRESETS["c6"]).observe(images, PROMPTS[1:3])
    for a, b in zip(previous, current, strict=True):
        assert np.array_equal(a.disparity, b.disparity) if a.disparity is not None else b.disparity is None
        for name, obj in a.objects.items():
            other = b.objects[name]
            assert (obj.present, obj.confidence, obj.box, obj.value_scores) == (
                other.present,
                other.confidence,
                other.box,
                other.value_scores,
            )
            assert (obj.mask is None and other.mask is None) or np.array_equal(obj.mask, other.mask)


@pytest.mark.slow
def test_ablation_observes_once_per_detector_and_sam_pair(study):
    tmp_path, dataset, annotations, _ = study
    labels = build_labels(read_annotations(annotations), BY_ID)
    made: list[CountingPerception] = []

    def factory(config):
        made.append(CountingPerception(config))
        return made[-1]

    out = tmp_path / "ablation"
    outcome = run_ablation(
        dataset, labels, TABLE17, out, prompts=BY_ID, perception_for=factory, resamples=20, progress=False
    )
    images = len(PROMPTS) * SAMPLES
    assert [p.config.name for p in made] == ["c1", "c3", "c5", "c7"]  # one perception per group
    assert [p.images for p in made] == [images] * 4  # each image observed once per group
    assert outcome.observed == {"c1, c2": images, "c3, c4": images, "c5, c6": images, "c7, c8": images}
    assert outcome.missing == [("m", "proximity_pos0_neg1_000", 7)]

    table = outcome.table
    assert [row["config"] for row in table.rows] == [f"c{n}" for n in range(1, 9)]
    assert [(r["detector"], r["sam"], r["constants"]) for r in table.rows[:2]] == [
        ("Mask R-CNN", "✓", "Previous"),
        ("Mask R-CNN", "✓", "Current"),
    ]
    assert [(r["detector"], r["sam"], r["constants"]) for r in table.rows[6:]] == [
        ("RF-DETR-XL", "–", "Previous"),
        ("RF-DETR-XL", "–", "Current"),
    ]
    assert all(row["n"] == images for row in table.rows)
    for row in table.rows:
        block = outcome.report["evaluators"][row["config"]]
        assert (row["accuracy"], row["kappa"]) == (block["accuracy"], block["kappa"])
        assert row["accuracy_ci"] == block["accuracy_ci"] and len(row["accuracy_ci"]) == 2
        assert block["coverage"]["labelled_not_scored"] == 1 and block["coverage"]["used"] == images

    for config in TABLE17:
        records = read_results(out / "results" / f"{config.name}.jsonl")
        assert len(records) == images and {r.config_hash for r in records} == {config.config_hash}
    c1 = {r.key: r for r in read_results(out / "results" / "c1.jsonl")}
    c2 = {r.key: r for r in read_results(out / "results" / "c2.jsonl")}
    assert all(c1[key].objects == c2[key].objects for key in c1)  # the same observation, judged twice
    assert any(o.present for r in c1.values() for o in r.objects)

    written = {path.name for path in outcome.written}
    assert {"ablation.md", "ablation.csv", "ablation.json", "agreement.json", "agreement.md"} <= written
    markdown = (out / "ablation.md").read_text(encoding="utf-8")
    assert "## Evaluator ablation (paper Table 17)" in markdown and markdown.count("\n| c") == 8
    rows = list(csv.DictReader(io.StringIO((out / "ablation.csv").read_text(encoding="utf-8"))))
    assert [r["config"] for r in rows] == [f"c{n}" for n in range(1, 9)] and rows[0]["accuracy_ci_low"]
    summary = json.loads((out / "ablation.json").read_text(encoding="utf-8"))
    assert summary["n_images"] == images + 1 and len(summary["configs"]) == 8
    assert summary["results"]["c4"] == "results/c4.jsonl"
    assert set(json.loads((out / "agreement" / "agreement.json").read_text())["evaluators"]) == set(summary["results"])

    made.clear()  # a rerun resumes: nothing is observed again, the table is the same
    again = run_ablation(
        dataset, labels, TABLE17, out, prompts=BY_ID, perception_for=factory, resamples=20, progress=False
    )
    assert [p.images for p in made] == [0, 0, 0, 0] and again.table.rows == table.rows


@pytest.mark.slow
def test_ablate_command_and_agree_on_its_results(study, monkeypatch, capsys):
    tmp_path, dataset, annotations, prompts_file = study
    made = []

    def factory(config, device="auto", batch_size=8, dtype=None, weights_dir=None):
        made.append((config.name, device, batch_size))
        return tiny_perception(config, batch_size=batch_size)

    replace_model_perception(monkeypatch, factory)
    out = tmp_path / "out"
    argv = ["ablate", "--images", str(dataset), "--annotations", str(annotations), "--prompts", str(prompts_file)]
    argv += ["--configs", "c5", "c6", "c5", "--out", str(out), "--device", "cpu", "--batch-size", "3"]
    assert main(argv + ["--bootstrap", "0", "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert made == [("c5", "cpu", 3)]  # one perception for both (c5 given twice counts once)
    assert "perception: 8 image(s) observed once for c5, c6" in printed
    assert "| c6 | RF-DETR-XL | ✓ | Current | 8 |" in printed
    assert "note: 1 annotated image(s) have fewer than 3 annotators" in printed
    assert "note: 1 labelled image(s) are not in" in printed
    summary = json.loads((out / "ablation.json").read_text(encoding="utf-8"))
    results = [str(out / path) for path in summary["results"].values()]
    agree = ["agree", "--annotations", str(annotations), "--results", *results, "--prompts", str(prompts_file)]
    assert main(agree + ["--out", str(tmp_path / "agree"), "--bootstrap", "0"]) == 0
    agreed = json.loads((tmp_path / "agree" / "agreement.json").read_text(encoding="utf-8"))["evaluators"]
    by_config = {row["config"]: row for row in summary["configs"]}
    assert {name: block["accuracy"] for name, block in agreed.items()} == {
        f"negt2ibench/{name}": row["accuracy"] for name, row in by_config.items()
    }


def test_ablate_refuses_what_it_cannot_compare(study, capsys):
    tmp_path, dataset, _, prompts_file = study
    lonely = write_jsonl([annotation(PROMPTS[0], "ann", True)], tmp_path / "one.jsonl")
    argv = ["ablate", "--images", str(dataset), "--prompts", str(prompts_file), "--out", str(tmp_path / "o")]
    assert main(argv + ["--annotations", str(lonely), "--device", "cpu"]) == 1
    assert "no image has three annotators yet (1 have fewer)" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(argv + ["--annotations", str(lonely), "--configs", "c9"])
    assert exited.value.code == 2 and "invalid choice: 'c9'" in capsys.readouterr().err
