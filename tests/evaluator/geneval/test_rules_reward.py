"""`geneval_reward` against reward-server's `evaluate_reward` (yifan123/reward-server@92ac29f,
reward_server/gen_eval.py, transcribed in `tests.helpers.reward_reference` and cited by line).

The hand-made cases derive their numbers from those lines, written out beside each; the parity test
runs the transcription and `geneval_reward` / `geneval_verdict` on the same random scenes.
"""

from __future__ import annotations

import numpy as np
import pytest

from evaluator.geneval import GenEvalDetection, GenEvalReward, geneval_reward, geneval_verdict
from evaluator.geneval.prompts import load_geneval_prompts
from tests.helpers import reward_reference
from tests.helpers.geneval_helpers import random_geneval_scene


def det(score: float, x: float = 50, y: float = 50, color: str | None = None, size: float = 10) -> GenEvalDetection:
    return GenEvalDetection((x - size / 2, y - size / 2, x + size / 2, y + size / 2), score, color)


TWO_DOGS = {
    "tag": "counting",
    "include": [{"class": "dog", "count": 2}],
    "exclude": [{"class": "dog", "count": 3}],
    "prompt": "a photo of two dogs",
}
RED_CUP = {"tag": "colors", "include": [{"class": "cup", "count": 1, "color": "red"}], "prompt": "a photo of a red cup"}
DOG_RIGHT_OF_CAT = {
    "tag": "position",
    "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["right of", 0]}],
    "prompt": "a photo of a dog right of a cat",
}


def test_counting_credit_is_one_minus_the_relative_count_error():
    # :219 1 - |2 - found| / 2 over the dogs above 0.9 (:275); :220 strict needs found == 2.
    one = geneval_reward(TWO_DOGS, {"dog": [det(0.95), det(0.5, x=90)]})
    assert one == GenEvalReward(0.5, False, "expected dog==2, found 1")
    two = geneval_reward(TWO_DOGS, {"dog": [det(0.95), det(0.96, x=90)]})
    assert two == GenEvalReward(1.0, True, "")
    # Five dogs: 1 - 3/2 = -0.5; the exclude clause is never read (:201-264), the count alone fails.
    five = geneval_reward(TWO_DOGS, {"dog": [det(0.91 + i / 100, x=20 * i) for i in range(5)]})
    assert five == GenEvalReward(-0.5, False, "expected dog==2, found 5")
    # No include clause at all: :263 gives 0 (no credit to average).
    assert geneval_reward({"tag": "single_object", "prompt": "-"}, {}).score == 0.0


def test_colour_credit_follows_the_count_and_a_wrong_count_scores_the_colour_zero():
    # :228-229 the colour of the one cup found: red -> [1.0, 1.0]; blue -> [1.0, 0.0] = 0.5.
    assert geneval_reward(RED_CUP, {"cup": [det(0.8, color="red")]}) == GenEvalReward(1.0, True)
    blue = geneval_reward(RED_CUP, {"cup": [det(0.8, color="blue")]})
    assert (blue.score, blue.strict) == (0.5, False)
    assert blue.reason == "expected red cup>=1, found 0 red; and 1 blue"  # :233-235's text
    # Two cups: 1 - 1/1 = 0.0, then :223-224 adds 0.0 for the colour never read -> 0.0.
    assert geneval_reward(RED_CUP, {"cup": [det(0.8, color="red"), det(0.7, x=90, color="red")]}).score == 0.0


def test_a_failed_position_pair_adds_zero_and_then_one():
    cat = det(0.9, x=50)
    # Dog to the right: cat [1.0], dog [1.0, 1.0 (:258)] -> 1.0.
    right = geneval_reward(DOG_RIGHT_OF_CAT, {"cat": [cat], "dog": [det(0.9, x=100)]})
    assert right == GenEvalReward(1.0, True)
    # Dog to the left: :254 appends 0.0, the loops break, and :258 still appends 1.0: [1.0], [1.0, 0.0, 1.0] -> 0.75.
    left = geneval_reward(DOG_RIGHT_OF_CAT, {"cat": [cat], "dog": [det(0.9, x=0)]})
    assert left == GenEvalReward(0.75, False, "expected dog right of target, found left of target")
    # No cat: the cat's count [0.0]; the dog's count [1.0] then "no target" [0.0] (:240-243) -> 1/3.
    alone = geneval_reward(DOG_RIGHT_OF_CAT, {"dog": [det(0.9, x=100)]})
    assert alone.score == pytest.approx(1 / 3) and alone.score == (0.0 + 1.0 + 0.0) / 3
    assert alone.reason == "expected cat==1, found 0\nno target for dog to be right of"


def test_a_zero_include_count_is_refused_as_reward_server_cannot_divide_by_it():
    with pytest.raises(ValueError, match="count ≥ 1"):
        geneval_reward({"tag": "two_object", "include": [{"class": "dog", "count": 0}], "prompt": "-"}, {})
    with pytest.raises(ValueError, match="needs a tag"):
        geneval_reward({"include": []}, {})


SCENES = 2400


@pytest.mark.slow
def test_parity_with_reward_server_on_random_scenes():
    """score, strict and GenEval's verdict equal reward-server's on 2,400 random scenes of GenEval's
    553 prompts (scores compared exactly: the same float operations in the same order)."""
    rng = np.random.default_rng(20260)
    prompts = load_geneval_prompts()
    outcomes = {"strict": 0, "partial": 0, "negative": 0, "verdict_differs_from_strict": 0}
    strict_by_tag: dict[str, int] = dict.fromkeys(reward_reference.REQUIRED_KEYS, 0)
    for _ in range(SCENES):
        metadata = dict(prompts[int(rng.integers(len(prompts)))].metadata)
        detections, arrays, colour_of = random_geneval_scene(rng, metadata)
        selected = reward_reference.select(arrays, metadata)
        strict, score = reward_reference.evaluate_reward(colour_of, selected, metadata)
        correct = reward_reference.evaluate(colour_of, selected, metadata)
        ours = geneval_reward(metadata, detections)
        assert (ours.score, ours.strict) == (score, strict), (metadata, arrays)
        assert geneval_verdict(metadata, detections).correct == correct, (metadata, arrays)
        outcomes["strict"] += strict
        strict_by_tag[metadata["tag"]] += strict
        outcomes["partial"] += 0 < score < 1
        outcomes["negative"] += score < 0
        outcomes["verdict_differs_from_strict"] += correct != strict
    # The scenes reach every kind of outcome, so the parity is not a parity of trivial cases.
    assert all(count >= 50 for count in outcomes.values()), outcomes
    assert all(count >= 20 for count in strict_by_tag.values()), strict_by_tag
