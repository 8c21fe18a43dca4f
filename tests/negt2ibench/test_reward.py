"""`negt2ibench.reward`: the in-process reward, on the rectangle double (NegT2IBench), scripted detections
(GenEval, checked against reward-server's `compute_geneval` transcribed in `tests.helpers.reward_reference`)
and tiny random models (mechanics only)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from dataset_builder.corpus import build_corpus
from dataset_builder.vocabulary import CATEGORIES as CATEGORY_KEYS
from evaluator.geneval.prompts import load_geneval_prompts
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.verdict import decide_statements
from negt2ibench.reward import (
    OTHER_GROUP,
    RESPONSE_KEYS,
    Reward,
    RewardError,
    RewardFault,
    RewardInputError,
    as_images,
    pixel_batches,
)
from tests.helpers import reward_reference
from tests.helpers.geneval_helpers import ScriptedGenEvalPerception, random_geneval_scene
from tests.helpers.space_helpers import RectanglePerception, scene_png

CORPUS = {record.prompt_id: record for record in build_corpus()}
COLOR = CORPUS["color_pos1_neg1_000"]  # a white car and a non-white computer mouse
ONLY_NEGATED = CORPUS["color_pos0_neg2_000"]  # a non-white car and a non-white computer mouse
DIRECTIONAL = CORPUS["directional_pos1_neg1_000"]  # the cake is right of the tv and is not right of the zebra
SIZE = (256, 192)


def scene() -> Image.Image:
    """A gradient: not flat, so the double lays the prompt's objects out left to right."""
    gradient = np.linspace(0, 255, SIZE[0], dtype=np.uint8)[None, :, None].repeat(SIZE[1], 0).repeat(3, 2)
    return Image.fromarray(gradient)


def blank() -> Image.Image:
    return Image.new("RGB", SIZE, (255, 255, 255))


def negation(double: RectanglePerception) -> Reward:
    return Reward(("negation",), negation_perception=double, prompts=list(CORPUS.values()))


def columns(*names: str) -> dict[str, tuple[int, int, int, int]]:
    """Boxes for NAMES in three equal columns, left to right (the double's own layout for three objects)."""
    double = RectanglePerception()
    return {name: double._box(index, 3, *SIZE) for index, name in enumerate(names)}


# -- the negation reward on hand-counted scenes ----------------------------------------------------


@pytest.mark.parametrize(
    ("double", "score", "strict", "causes"),
    [
        # car and mouse found, both white (the double's default: the first statement's value):
        # objects 2/2, "white car" holds, "non-white mouse" fails -> 3 of 4 elements.
        (RectanglePerception(), 3 / 4, False, [None, "forbidden_rendered"]),
        # the mouse red: every element holds -> 4 of 4.
        (RectanglePerception(values={"computer mouse": "red"}), 1.0, True, [None, None]),
        # no car: objects 1/2, "white car" fails (subject_missing), the white mouse fails -> 1 of 4.
        (RectanglePerception(absent=["car"]), 1 / 4, False, ["subject_missing", "forbidden_rendered"]),
    ],
)
def test_the_colour_score_is_the_share_of_satisfied_elements(double, score, strict, causes):
    out = negation(double)([scene()], [COLOR])
    assert out["scores"] == [score] and out["strict_rewards"] == [float(strict)] == out["rewards"]
    [details] = out["details"]
    assert [s["cause"] for s in details["statements"]] == causes
    assert [s["text"] for s in details["statements"]] == ["a white car", "a non-white computer mouse"]
    assert details["prompt_id"] == "color_pos1_neg1_000" and len(details["objects"]) == 2


def test_the_directional_score_counts_objects_and_statements():
    # Left to right cake, tv, zebra: "cake right of tv" fails (wrong_value: left of is measured), "cake not
    # right of zebra" holds -> objects 3/3 + statements 1/2 = 4 of 5.
    out = negation(RectanglePerception())([scene()], [DIRECTIONAL])
    assert out["scores"] == [4 / 5] and out["strict_rewards"] == [0.0]
    assert [s["cause"] for s in out["details"][0]["statements"]] == ["wrong_value", None]
    # tv, cake, zebra: both hold -> 5 of 5.
    out = negation(RectanglePerception(boxes=columns("tv", "cake", "zebra")))([scene()], [DIRECTIONAL])
    assert out["scores"] == [1.0] and out["strict_rewards"] == [1.0]


@pytest.mark.parametrize("prompt", [COLOR, ONLY_NEGATED, DIRECTIONAL], ids=lambda p: p.prompt_id)
def test_a_blank_image_scores_zero_even_when_every_statement_is_negated(prompt):
    out = negation(RectanglePerception())([blank()], [prompt])
    assert out["scores"] == [0.0] and out["strict_rewards"] == [0.0]
    assert {s["cause"] for s in out["details"][0]["statements"]} == {"subject_missing"}


def test_why_the_blank_image_scores_zero_is_the_verdict_rule_not_the_double():
    # Nothing present: "a non-white car" would be vacuously true of an empty picture, but a negated
    # statement holds only when its subject is there (evaluator/verdict.py), so 0 of 4, never 2 of 4.
    nothing = ImageObservation(width=64, height=64)
    for name in ONLY_NEGATED.objects:
        nothing.objects[name] = ObjectObservation(name=name, present=False)
    record = decide_statements(ONLY_NEGATED, nothing, model_key="reward", sample_index=0)
    assert record.score == 0.0 and [s.cause for s in record.statements] == ["subject_missing"] * 2


def test_metadata_in_every_form_gives_the_same_reward():
    reward = negation(RectanglePerception())
    forms = [
        COLOR,
        COLOR.model_dump(),  # a line of prompts.jsonl (or of a train split's train_metadata.jsonl)
        "color_pos1_neg1_000",
        {"prompt_id": "color_pos1_neg1_000"},
        {"prompt": COLOR.prompt},  # typed text: the benchmark prompt it equals
        COLOR.prompt,
        {"prompt_id": "train_color_pos1_neg1_000", "prompt": COLOR.prompt},  # unknown id: the text is read
    ]
    out = reward([scene()] * len(forms), forms)
    assert out["scores"] == [3 / 4] * len(forms)
    assert out["group_strict_rewards"]["color"] == [0.0] * len(forms)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ("color_pos9_neg9_000", r"meta_datas\[0\]: unknown prompt id"),
        ({"prompt": "a photo of a car, which is not"}, r"meta_datas\[0\]: cannot parse the prompt"),
        ({"statements": [], "prompt_id": "x"}, r"meta_datas\[0\] is not a prompt record"),
        (42, r"meta_datas\[0\] must be GenEval metadata, a prompt record"),
        ({"tag": "colors", "include": []}, r"meta_datas\[0\] is GenEval metadata, but this reward scores negation"),
    ],
)
def test_bad_metadata_is_one_line_naming_the_image(metadata, message):
    with pytest.raises(RewardError, match=message) as caught:
        negation(RectanglePerception())([scene()], [metadata])
    assert "\n" not in str(caught.value)


def test_groups_mark_other_categories_minus_ten_and_only_strict_zeroes_rewards():
    reward = negation(RectanglePerception(values={"computer mouse": "red"}))
    out = reward([scene(), scene()], [COLOR, DIRECTIONAL], only_strict=True)
    assert set(out) == {*RESPONSE_KEYS, "details"}
    assert out["rewards"] == [0.0, 0.0] and out["strict_rewards"] == [1.0, 0.0]
    categories = ["color", "material", "directional", "proximity", "comparative", "depth"]
    assert list(out["group_strict_rewards"]) == categories
    assert out["group_strict_rewards"]["color"] == [1.0, OTHER_GROUP]
    assert out["group_strict_rewards"]["directional"] == [OTHER_GROUP, 0.0]
    assert out["group_strict_rewards"]["depth"] == [OTHER_GROUP, OTHER_GROUP] == out["group_rewards"]["depth"]


# -- images in every form -------------------------------------------------------------------------


@pytest.mark.slow
def test_a_float_nchw_tensor_a_uint8_batch_and_pil_images_are_the_same_pixels(tmp_path):
    pictures = [scene(), Image.open(scene_png(tmp_path / "s.png", SIZE)).convert("RGB")]
    pixels = np.stack([np.asarray(p) for p in pictures])
    tensor = torch.from_numpy(pixels).permute(0, 3, 1, 2).float() / 255
    for batch in (tensor, pixels, list(pixels), pictures, tensor.to(torch.float64)):
        assert [np.asarray(image).tolist() for image in as_images(batch)] == pixels.tolist()
    assert [np.asarray(i).tolist() for i in as_images((tensor * 255).to(torch.uint8))] == pixels.tolist()


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (torch.full((1, 3, 8, 8), 200.0), r"float image tensor holds values in \[0, 1\]"),
        (torch.zeros(3, 8, 8), "N×C×H×W"),
        (np.zeros((8, 8, 3), np.uint8), "N×H×W×C"),
        ([b"not an image"], r"images\[0\]"),
        ("cup.png", "must be a batch"),
    ],
)
def test_what_is_not_an_image_batch_is_refused_in_one_line(batch, message):
    with pytest.raises(RewardError, match=message):
        as_images(batch)


def test_one_metadata_per_image():
    with pytest.raises(RewardError, match="2 images but 1 metadata"):
        negation(RectanglePerception())([scene(), scene()], [COLOR])


# -- GenEval's reward, batch and groups as reward-server ----------------------------------------------


def test_the_geneval_batch_equals_reward_servers_compute_geneval():
    rng = np.random.default_rng(7)
    prompts = load_geneval_prompts()
    metadatas, ours, reference = [], [], []
    for _ in range(150):
        metadata = dict(prompts[int(rng.integers(len(prompts)))].metadata)
        detections, arrays, colour_of = random_geneval_scene(rng, metadata)
        metadatas.append(metadata)
        ours.append(detections)
        reference.append((metadata, arrays, colour_of))
    for only_strict in (False, True):
        double = ScriptedGenEvalPerception(ours)
        out = Reward(("geneval",), geneval_perception=double, batch_size=64)([scene()] * 150, metadatas, only_strict)
        expected = dict(zip(RESPONSE_KEYS, reward_reference.compute_geneval(reference, only_strict), strict=True))
        assert out == expected  # the five keys, no other; the -10 marker; group key order aside
        assert list(out["group_rewards"]) == reward_reference.REQUIRED_KEYS
        assert double.calls == [64, 64, 22]  # batched as asked


def test_a_reward_for_both_kinds_keys_both_group_sets():
    rng = np.random.default_rng(3)
    metadata = dict(load_geneval_prompts()[0].metadata)
    detections, _, _ = random_geneval_scene(rng, metadata)
    reward = Reward(
        ("geneval", "negation"),
        geneval_perception=ScriptedGenEvalPerception([detections]),
        negation_perception=RectanglePerception(),
        prompts=list(CORPUS.values()),
    )
    out = reward([scene(), scene()], [COLOR, metadata])
    assert len(out["group_rewards"]) == 12 and out["details"][1] is None
    assert out["group_strict_rewards"]["single_object"][0] == OTHER_GROUP
    assert out["group_strict_rewards"]["color"][1] == OTHER_GROUP


@pytest.mark.slow
def test_tiny_geneval_models_run_in_process():
    from evaluator.geneval import GENEVAL
    from evaluator.geneval.perception import GenEvalPerception
    from tests.helpers.geneval_helpers import tiny_clip, tiny_mask2former

    perception = GenEvalPerception.from_models(GENEVAL, detector=tiny_mask2former(), clip=tiny_clip())
    metadatas = [dict(prompt.metadata) for prompt in load_geneval_prompts()[:4]]
    out = Reward(("geneval",), geneval_perception=perception)(torch.rand(4, 3, 64, 64), metadatas)
    assert set(out) == set(RESPONSE_KEYS) and len(out["scores"]) == 4
    assert all(isinstance(value, float) for value in out["scores"] + out["rewards"] + out["strict_rewards"])


# -- an image the scorer fails on, batches by pixels, the group keys ------------------------------------


class FailsOnRed(RectanglePerception):
    """The double, failing (as a model would) on a batch that holds an all-red picture."""

    def observe(self, images, prompts):
        if any(np.asarray(image)[..., 0].min() == 255 and np.asarray(image)[..., 1].max() == 0 for image in images):
            raise RuntimeError("the detector failed")
        return super().observe(images, prompts)


def test_an_image_the_scorer_fails_on_fails_the_batch_and_is_never_given_a_score():
    # docs/reward.md: an image the scorer fails on (an error row) is never given a score; the batch fails,
    # naming it (RewardFault, a 500 from the server). Defends against passing error rows through as scores.
    red = Image.new("RGB", SIZE, (255, 0, 0))
    reward = negation(FailsOnRed())
    with pytest.raises(RewardFault, match=r"images\[1\] could not be scored: .*the detector failed") as caught:
        reward([scene(), red, scene()], [COLOR] * 3)
    assert not isinstance(caught.value, RewardInputError)
    assert reward([scene()], [COLOR])["scores"] == [3 / 4]  # the same reward goes on


def test_batches_hold_at_most_the_pixels_asked_for():
    small, large = Image.new("RGB", (64, 64)), Image.new("RGB", (256, 256))
    assert pixel_batches([small] * 5, 2, 10**9) == [[0, 1], [2, 3], [4]]
    assert pixel_batches([small, small, large, small], 64, 256 * 256) == [[0, 1], [2], [3]]
    double = RectanglePerception()
    reward = Reward(
        ("negation",), negation_perception=double, prompts=list(CORPUS.values()), batch_pixels=2 * 256 * 192
    )
    assert reward([scene()] * 5, [COLOR] * 5)["scores"] == [3 / 4] * 5
    assert double.calls == 3  # 2 + 2 + 1 images of 256 × 192 px


def test_the_group_keys_are_the_served_rewards_in_every_answer():
    # docs/reward.md (One reward per run): Flow-GRPO gathers each key across processes, so no answer drops one.
    reward = Reward(
        ("geneval", "negation"),
        geneval_perception=ScriptedGenEvalPerception([]),
        negation_perception=RectanglePerception(),
        prompts=list(CORPUS.values()),
    )
    out = reward([scene()], [COLOR])
    assert list(out["group_strict_rewards"]) == [*reward_reference.REQUIRED_KEYS, *CATEGORY_KEYS]
    assert out["group_strict_rewards"]["colors"] == [OTHER_GROUP]


def test_numpy_string_metadata_reads_as_its_text():
    metadatas = np.array_split(np.array([COLOR.prompt_id, COLOR.prompt]), 1)[0]  # what Flow-GRPO's client passes
    assert negation(RectanglePerception())([scene(), scene()], metadatas)["scores"] == [3 / 4, 3 / 4]
