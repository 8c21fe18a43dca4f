"""Reading a judge's answer letter: the yes/no path's next-token scoring generalised to option letters,
checked on hand-set logits (a model double behind the real `TransformersJudge`), on the tiny real
models of every family, and the written reply's letter.
"""

from __future__ import annotations

import math

import pytest
import torch

from judges.negvqa.records import PROMPT, generated_letter, likelier, prompt_text
from judges.yesno import ChoiceTokens, YesNoTokens, choice_probabilities, yes_no_probabilities
from tests.helpers.judge_helpers import TINY_BUILDERS, solid_image, tiny_vocabulary
from tests.helpers.negvqa_doubles import scripted_judge


def test_choice_probabilities_sum_each_answers_spellings_then_softmax():
    tokens = ChoiceTokens(("A", "B", "C"), ((1, 2), (3,), (4,)), (("A", " A"), ("B",), ("C",)))
    logits = torch.full((1, 6), -60.0)
    logits[0, 1], logits[0, 2], logits[0, 3], logits[0, 4] = 0.0, math.log(2), math.log(3), math.log(5)
    # A: e^0 + e^ln2 = 3; B: 3; C: 5 → (3, 3, 5) / 11
    assert choice_probabilities(logits, tokens)[0].tolist() == pytest.approx([3 / 11, 3 / 11, 5 / 11], abs=1e-6)


def test_yes_no_is_the_two_answer_case_of_the_same_path():
    tokens = YesNoTokens(yes_ids=(1, 2), no_ids=(3,), yes_variants=("yes", "Yes"), no_variants=("no",))
    logits = torch.randn(4, 6, generator=torch.Generator().manual_seed(0))
    p_yes, p_no = yes_no_probabilities(logits, tokens)
    both = choice_probabilities(logits, tokens.choices)
    assert torch.equal(p_yes, both[:, 0]) and torch.equal(p_no, both[:, 1])


def test_the_prompt_is_negvqas_and_vlmevalkits():
    # The seed's §3.1 and VLMEvalKit's VMCBenchDataset.build_prompt (the authors' runner), two options.
    assert prompt_text("What is not red?", ("the cup", "the car")) == (
        "Question: What is not red?\nOptions:\nA. the cup\nB. the car\n"
        "Answer with the option's letter from the given choices directly. \n"
    )
    assert PROMPT.count("{") == 3


def test_hand_set_logits_give_the_letters_worked_out_by_hand():
    # logit(A), logit(B) → p_A = e^a / (e^a + e^b); every other token at -30 is negligible (≈ e^-30).
    logits = {"first?": (2.0, 0.0), "second?": (0.0, math.log(3)), "tie?": (1.0, 1.0), "third?": (-1.0, 4.0)}
    judge = scripted_judge(logits, batch_size=3)  # four prompts: a batch of 3, then 1, left-padded
    prompts = [prompt_text(q, ("x", "y")) for q in logits]
    images = [solid_image((200, 10, 10), (40, 40)), solid_image(), solid_image((0, 0, 200), (64, 32)), solid_image()]
    found = judge.letter_probabilities(images, prompts)
    expected = [
        (math.e**2 / (math.e**2 + 1), 1 / (math.e**2 + 1)),
        (0.25, 0.75),
        (0.5, 0.5),
        (math.exp(-1) / (math.exp(-1) + math.exp(4)), math.exp(4) / (math.exp(-1) + math.exp(4))),
    ]
    assert [p for row in found for p in row] == pytest.approx([p for row in expected for p in row], abs=1e-6)
    assert [likelier(row) for row in found] == ["A", "B", "A", "B"]  # a tie goes to A
    vocab, _ = tiny_vocabulary()
    tokens = judge.letter_tokens(("A", "B"))
    assert tokens.ids == ((vocab["A"],), (vocab["B"],)) and tokens.variants == (("A",), ("B",))  # " A": two tokens


def test_the_written_reply_and_its_letter():
    judge = scripted_judge({"q?": (0.0, 1.0)}, replies={"q?": "B. a dog"})
    assert judge.generate([solid_image()], [prompt_text("q?", ("a cat", "a dog"))]) == ["B. a dog"]


@pytest.mark.parametrize(
    ("reply", "letter"),
    [
        ("B", "B"),
        ("A.", "A"),
        ("(B) the car", "B"),
        ("Answer: A", "A"),
        (" b", None),  # lower case is not read as a letter
        ("a cat", "A"),  # the option's own text
        ("A dog", "A"),
        ("Apple", None),
        ("the cup.", "A"),
        ("I cannot tell", None),
        ("", None),
    ],
)
def test_generated_letter(reply, letter):
    assert generated_letter(reply, ("the cup", "a car") if "cup" in reply else ("a cat", "a dog")) == letter


@pytest.mark.slow
@pytest.mark.parametrize("family", list(TINY_BUILDERS))
def test_real_tiny_models_read_letters_that_sum_to_one_whatever_the_batch(family):
    from judges.registry import REGISTRY
    from judges.transformers_judge import TransformersJudge

    model, processor = TINY_BUILDERS[family]()
    judge = TransformersJudge.from_models(model, processor, spec=REGISTRY["qwen3_vl_8b"], batch_size=2)
    prompts = [prompt_text(f"Which is not {c}?", ("the cup", "the car")) for c in ("red", "blue", "green")]
    images = [solid_image((200, 30, 30)), solid_image((20, 30, 200), (30, 60)), solid_image((20, 200, 30), (64, 64))]
    batched = judge.letter_probabilities(images, prompts)
    alone = [judge.letter_probabilities([image], [prompt])[0] for image, prompt in zip(images, prompts, strict=True)]
    assert all(sum(row) == pytest.approx(1.0, abs=1e-6) and all(0 < p < 1 for p in row) for row in batched)
    assert [p for row in batched for p in row] == pytest.approx([p for row in alone for p in row], abs=1e-5)
    assert len(judge.generate(images[:1], prompts[:1], max_new_tokens=3)) == 1
