"""The Score tab's judge panel with the real transformers judge class (a tiny random-weight
Qwen2-VL, offline): the questions of each mode, P("yes") and satisfaction per row, a missing
judge's weights as one line, and the options."""

from __future__ import annotations

import re

import pytest

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from judges.registry import REGISTRY
from judges.transformers_judge import TransformersJudge
from negt2ibench.core.errors import UsageError, UserError
from space.tabs.score.judge_panel import JUDGE_COLUMNS, judge_frame, judge_panel
from tests.helpers.judge_helpers import solid_image, tiny_qwen2_vl
from tests.helpers.space_helpers import scene_png

PROMPT_ID = "directional_pos1_neg1_000"  # the cake is right of the tv and is not right of the zebra


@pytest.fixture(scope="module")
def index():
    return PromptIndex(load_prompts(None))


@pytest.fixture(scope="module")
def tiny_judge():
    model, processor = tiny_qwen2_vl()
    return TransformersJudge.from_models(model, processor, spec=REGISTRY["qwen2_5_vl_7b"], batch_size=4)


def prompt_of(index):
    return lambda prompt_id, custom: index[prompt_id]


@pytest.mark.parametrize(
    ("mode", "negated_question"),
    [("pos", "Is the cake right of the zebra?"), ("neg", "Is the cake not right of the zebra?")],
)
def test_tiny_judge_answers_every_question_of_its_mode(tmp_path, index, tiny_judge, mode, negated_question):
    panel = judge_panel(tiny_judge, mode, prompt_of(index), preload=False)
    summary, frame = panel.judge(str(scene_png(tmp_path / "scene.png")), PROMPT_ID, "")
    assert list(frame.columns) == JUDGE_COLUMNS
    assert list(frame["question"]) == [
        "Is there a cake in the image?",
        "Is there a tv in the image?",
        "Is there a zebra in the image?",
        "Is the cake right of the tv?",
        negated_question,
    ]
    assert list(frame["element"]) == ["object cake", "object tv", "object zebra", "statement 0", "statement 1"]
    assert frame["p(yes)"].between(0, 1).all()
    inverted = mode == "pos"  # the negated statement asked affirmatively: "no" satisfies it
    for row in frame.to_dict("records"):
        p_yes, p_satisfied = row["p(yes)"], row["p(satisfied)"]
        expected = 1 - p_yes if inverted and row["element"] == "statement 1" else p_yes
        assert p_satisfied == pytest.approx(expected, abs=1e-3)
        assert row["satisfied"] == ("yes" if p_satisfied > 0.5 else "no")
    assert summary.startswith(f"### Judge qwen2_5_vl_7b/{mode}: ")
    verdict = "PASS" if (frame["satisfied"] == "yes").all() else "FAIL"
    assert f"<span class='verdict-{verdict.lower()}'>{verdict}</span>" in summary


def test_whole_mode_asks_the_prompt(tmp_path, index, tiny_judge):
    panel = judge_panel(tiny_judge, "whole", prompt_of(index), preload=False)
    image = tmp_path / "red.png"
    solid_image(size=(64, 48)).save(image)
    _, frame = panel.judge(str(image), PROMPT_ID, "")
    assert list(frame["question"]) == [f'Does this image show "{index[PROMPT_ID].prompt}"? Answer yes or no.']
    assert list(frame["element"]) == ["prompt"]


def test_missing_judge_weights_are_one_line_in_the_panel(tmp_path, index):
    panel = judge_panel("qwen3_vl_8b", None, prompt_of(index), preload=False)  # default mode: pos
    assert (panel.key, panel.mode) == ("qwen3_vl_8b", "pos")
    summary, frame = panel.judge(str(scene_png(tmp_path / "scene.png")), PROMPT_ID, "")
    text = re.sub(r"\\(.)", r"\1", summary)  # the text the escaped Markdown shows
    assert text.startswith("**Error:** judge qwen3_vl_8b: ") and "\n" not in summary
    assert "Qwen/Qwen3-VL-8B-Instruct" in text and frame.empty


def test_judge_options(monkeypatch, index):
    monkeypatch.delenv("NEGT2I_JUDGE", raising=False)
    assert judge_panel(None, None, prompt_of(index)) is None  # off by default
    monkeypatch.setenv("NEGT2I_JUDGE", "qwen3_vl_8")
    with pytest.raises(UserError, match="unknown judge 'qwen3_vl_8'. Did you mean: qwen3_vl_8b"):
        judge_panel(None, None, prompt_of(index))
    with pytest.raises(UsageError, match="judge mode must be one of pos, neg, whole, got 'all'"):
        judge_panel("qwen3_vl_8b", "all", prompt_of(index))
    assert judge_frame(None).empty
