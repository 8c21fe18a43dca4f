"""`negt2ibench reward audit` on synthetic checkpoints: the rectangle double is the reward (a picture that is
not flat satisfies every positive statement: 1; a flat one: 0) and a pattern judge the second judge (it sees
the prompt only in a smooth gradient), so each checkpoint's numbers are known by hand. Then the command end
to end on tiny random models (mechanics only)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image

from dataset_builder.corpus import build_corpus
from dataset_builder.records import PromptIndex
from negt2ibench.reward import Reward
from negt2ibench.reward_audit import (
    JUDGE_GAP,
    TRAIN_GAP,
    CheckpointScores,
    ImageScores,
    audit_checkpoints,
    checkpoint_folders,
    run_audit,
)
from tests.helpers.reward_helpers import PatternJudge
from tests.helpers.space_helpers import RectanglePerception

SIZE = (96, 72)
# Positive-only attribute prompts: the double gives every object the prompt's value, so a picture that is
# not flat scores 1 and a flat one 0. Renamed as a training split's and a fresh draw's.
POSITIVE = [r for r in build_corpus() if r.setting in ("pos1_neg0", "pos2_neg0") and r.kind == "attribute"][:12]
TRAIN = [r.model_copy(update={"prompt_id": f"train_{r.prompt_id}"}) for r in POSITIVE[:6]]
FRESH = [r.model_copy(update={"prompt_id": f"fresh_{r.prompt_id}"}) for r in POSITIVE[6:]]


def gradient() -> Image.Image:
    row = np.linspace(0, 255, SIZE[0], dtype=np.uint8)
    return Image.fromarray(np.tile(row[None, :, None], (SIZE[1], 1, 3)))


def blank() -> Image.Image:
    return Image.new("RGB", SIZE, (255, 255, 255))


def speck() -> Image.Image:
    """Blank but one pixel: not flat, so the reward's double finds the objects; the judge sees nothing."""
    picture = blank()
    picture.putpixel((3, 3), (0, 0, 0))
    return picture


def judge_sees(picture: Image.Image) -> bool:
    return float(np.asarray(picture, dtype=float).std()) > 20.0


# checkpoint: (train images, fresh images)
CHECKPOINTS = {
    "step_0": (blank, blank),  # before training: nothing drawn
    "step_500": (gradient, blank),  # the training prompts learnt, the fresh draw not: memorised
    "step_1000": (gradient, gradient),  # learnt, and it carries over
    "step_1500": (speck, speck),  # a picture the reward's scorer takes and the judge does not: hacked
}


def write_checkpoints(root):
    for name, (train_picture, fresh_picture) in CHECKPOINTS.items():
        for split, records, picture in (("train", TRAIN, train_picture), ("fresh", FRESH, fresh_picture)):
            folder = root / name / split
            folder.mkdir(parents=True)
            for record in records:
                for sample in range(2):
                    picture().save(folder / f"{record.prompt_id}_{sample}.png")
    return root


def test_a_checkpoint_whose_train_reward_rises_while_the_fresh_one_stays_flat_is_flagged(tmp_path):
    root = write_checkpoints(tmp_path / "checkpoints")
    reward = Reward(("negation",), negation_perception=RectanglePerception())
    judge = PatternJudge(judge_sees)
    rows = run_audit(
        checkpoint_folders(root), (PromptIndex(TRAIN), PromptIndex(FRESH)), reward, judge, out=tmp_path / "audit"
    )
    assert [row.checkpoint for row in rows] == ["step_0", "step_500", "step_1000", "step_1500"]  # 500 before 1000
    means = [
        (row.reward_train.value, row.reward_fresh.value, row.judge_train.value, row.judge_fresh.value) for row in rows
    ]
    assert means == [(0, 0, 0, 0), (1, 0, 1, 0), (1, 1, 1, 1), (1, 1, 0, 0)]
    assert [row.flags for row in rows] == [(), (TRAIN_GAP,), (), (JUDGE_GAP,)]
    assert rows[1].train_gap.low == rows[1].train_gap.value == 1.0
    assert rows[3].judge_gap.value == 1.0 and rows[3].since_first and not rows[0].since_first
    assert rows[0].images == 24 and judge.questions > 0
    table = (tmp_path / "audit" / "audit.md").read_text()
    assert "| step_500 | 24 | 1.000 [1.000, 1.000] | 0.000 [0.000, 0.000] |" in table and TRAIN_GAP in table
    data = json.loads((tmp_path / "audit" / "audit.json").read_text())
    assert [row["flags"] for row in data["rows"]] == ["", TRAIN_GAP, "", JUDGE_GAP]
    assert data["rows"][1]["train_gap_ci_low"] == 1.0
    assert (tmp_path / "audit" / "audit.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "audit" / "audit.csv").read_text().startswith("checkpoint,images,reward_train,")


def scores(prompt_ids, reward, judge) -> ImageScores:
    return ImageScores(tuple(prompt_ids), tuple(reward), tuple(judge))


def test_a_gap_is_flagged_only_when_its_interval_clears_the_margin():
    ids = [f"p{i}" for i in range(10)]
    noisy = [0.0, 1.0] * 5  # mean 0.5, a wide interval over 10 prompts
    flat = [0.4] * 10
    wide = CheckpointScores("wide", scores(ids, noisy, noisy), scores(ids, flat, flat))
    [row] = audit_checkpoints([wide], margin=0.05)
    assert row.train_gap.value == pytest.approx(0.1) and row.train_gap.low < 0.05 and row.flags == ()
    clear = CheckpointScores("clear", scores(ids, [0.9] * 10, [0.1] * 10), scores(ids, [0.3] * 10, [0.3] * 10))
    [row] = audit_checkpoints([clear], margin=0.05)
    # one checkpoint: the reward − judge difference itself (0.8 on train, 0 on fresh: 0.4) is flagged
    assert row.flags == (TRAIN_GAP, JUDGE_GAP) and row.judge_gap.value == pytest.approx(0.4)
    [row] = audit_checkpoints([clear], margin=0.7)
    assert row.flags == ()


def test_the_judge_gap_is_the_change_since_the_first_checkpoint():
    # The reward reads 0.3 above the judge from the start (calibration), and never more: not flagged.
    ids = [f"p{i}" for i in range(8)]
    before = CheckpointScores("0", scores(ids, [0.5] * 8, [0.2] * 8), scores(ids, [0.5] * 8, [0.2] * 8))
    after = CheckpointScores("1", scores(ids, [0.9] * 8, [0.6] * 8), scores(ids, [0.9] * 8, [0.6] * 8))
    first, second = audit_checkpoints([before, after])
    assert first.judge_gap.value == pytest.approx(0.3) and first.flags == ()  # the baseline is not flagged
    assert second.judge_gap.value == pytest.approx(0.0) and second.flags == ()


@pytest.mark.slow
def test_reward_audit_end_to_end_on_tiny_models(tmp_path, monkeypatch, capsys):
    import judges.transformers_judge as transformers_judge
    from negt2ibench.cli import main
    from tests.helpers.judge_helpers import tiny_qwen3_vl
    from tests.helpers.perception_helpers import replace_model_perception, tiny_perception

    replace_model_perception(monkeypatch, lambda config, **_: tiny_perception(config))
    monkeypatch.setattr(transformers_judge, "load_pretrained", lambda spec, **_: tiny_qwen3_vl())
    monkeypatch.setattr(transformers_judge, "require_weights", lambda spec, download=False: None)
    for split, records in (("train", TRAIN[:2]), ("fresh", FRESH[:2])):
        folder = tmp_path / split
        folder.mkdir()
        (tmp_path / f"{split}.jsonl").write_text("".join(r.model_dump_json() + "\n" for r in records))
        for number, record in enumerate(records):
            Image.fromarray(np.random.default_rng(number).integers(0, 256, (72, 96, 3), dtype=np.uint8)).save(
                folder / f"{record.prompt_id}_0.png"
            )
    argv = ["reward", "audit", "--train", str(tmp_path / "train"), "--fresh", str(tmp_path / "fresh")]
    argv += ["--train-prompts", str(tmp_path / "train.jsonl"), "--fresh-prompts", str(tmp_path / "fresh.jsonl")]
    argv += ["--judge", "qwen3_vl_8b", "--device", "cpu", "--out", str(tmp_path / "audit")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "| checkpoint | images | reward: train |" in out and "| model | 4 |" in out
    rows = json.loads((tmp_path / "audit" / "audit.json").read_text())["rows"]
    assert len(rows) == 1 and all(0.0 <= rows[0][key] <= 1.0 for key in ("reward_train", "judge_fresh"))
