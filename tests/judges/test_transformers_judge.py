"""The transformers judge on tiny random-weight models of the real classes (Qwen2-VL, Qwen2.5-VL, Qwen3-VL,
InternVL3, InternVL3.5), offline: yes/no token ids, probabilities, batching, the chat text, loading from a folder.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
import torch

from judges.registry import REGISTRY, custom_spec
from judges.transformers_judge import TransformersJudge
from judges.yesno import YesNoTokens, find_yes_no_tokens, yes_no_probabilities
from negt2ibench.core.errors import UserError
from tests.helpers.judge_helpers import TINY_BUILDERS, solid_image, tiny_qwen2_vl, tiny_tokenizer, tiny_vocabulary

FAMILIES = list(TINY_BUILDERS)
QUESTIONS = [
    "Is there a cup in the image?",
    "Is the cup red?",
    "Is the backpack not left of the fork?",
    "Are there skis in the image?",
    'Does this image show "a photo of a red cup"? Answer yes or no.',
]
IMAGES = [
    solid_image((200, 30, 30), (48, 40)),
    solid_image((20, 30, 200), (30, 60)),
    solid_image((20, 200, 30), (64, 64)),
    solid_image((200, 200, 30), (40, 40)),
    solid_image((90, 90, 90), (56, 28)),
]


def judge_of(family: str, batch_size: int = 8) -> TransformersJudge:
    model, processor = TINY_BUILDERS[family]()
    return TransformersJudge.from_models(model, processor, spec=REGISTRY["qwen3_vl_8b"], batch_size=batch_size)


@pytest.mark.parametrize("family", FAMILIES)
def test_yes_no_tokens_found_for_each_tokenizer(family):
    vocab, _ = tiny_vocabulary()
    tokens = judge_of(family).tokens
    # " YES" and " NO" are two tokens in this vocabulary (as in Qwen's), so they are not used.
    assert tokens.yes_variants == ("yes", "Yes", "YES", " yes", " Yes")
    assert tokens.no_variants == ("no", "No", "NO", " no", " No")
    assert tokens.yes_ids == tuple(vocab[t] for t in ("yes", "Yes", "YES", "Ġyes", "ĠYes"))
    assert tokens.no_ids == tuple(vocab[t] for t in ("no", "No", "NO", "Ġno", "ĠNo"))


def test_a_tokenizer_without_a_yes_token_is_refused():
    tokenizer = tiny_tokenizer(())
    bare = type(tokenizer)(
        vocab={"<|endoftext|>": 0, "e": 1, "n": 2, "o": 3, "s": 4, "y": 5, "no": 6}, merges=[("n", "o")]
    )
    assert len(find_yes_no_tokens(tokenizer).yes_ids) == 5  # the full tiny vocabulary has them
    with pytest.raises(UserError, match="has no single token for 'yes'"):
        find_yes_no_tokens(bare, model="bare/model")


def test_probabilities_are_the_softmax_over_both_sides():
    tokens = YesNoTokens(yes_ids=(1, 2), no_ids=(3,), yes_variants=("yes", "Yes"), no_variants=("no",))
    logits = torch.full((2, 5), -50.0)
    logits[0, 1], logits[0, 2], logits[0, 3] = 0.0, math.log(3), math.log(4)  # (1 + 3) / (1 + 3 + 4)
    logits[1, 1], logits[1, 2], logits[1, 3] = 0.0, 0.0, 80.0
    p_yes, p_no = yes_no_probabilities(logits.to(torch.bfloat16).float(), tokens)
    assert p_yes[0].item() == pytest.approx(0.5, abs=0.01)
    assert p_yes[1].item() == pytest.approx(0.0, abs=1e-12) and p_no[1].item() == pytest.approx(1.0)
    assert torch.allclose(p_yes + p_no, torch.ones(2))


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_real_forward_gives_probabilities_that_sum_to_one_and_batching_changes_nothing(family):
    judge = judge_of(family, batch_size=3)  # 5 pairs: a batch of 3 then 2, left-padded
    batched = judge.yes_probability(IMAGES, QUESTIONS)
    one_by_one = [
        judge.yes_probability([image], [question])[0] for image, question in zip(IMAGES, QUESTIONS, strict=True)
    ]
    assert len(batched) == 5 and all(0.0 < p < 1.0 for p in batched)
    assert batched == pytest.approx(one_by_one, abs=1e-5)
    # The same logits through yes_no_probabilities: p_yes + p_no = 1 for every row.
    inputs = judge.processor(
        text=[judge.chat_text(q) for q in QUESTIONS], images=IMAGES, padding=True, return_tensors="pt"
    )
    with torch.inference_mode():
        logits = judge.model(**inputs).logits[:, -1, :]
    p_yes, p_no = yes_no_probabilities(logits, judge.tokens)
    assert torch.allclose(p_yes + p_no, torch.ones(5), atol=1e-6)
    assert p_yes.tolist() == pytest.approx(batched, abs=1e-5)


@pytest.mark.parametrize("family", ["qwen3_vl", "internvl3_5"])
def test_chat_text_is_the_models_template_with_the_question(family):
    text = judge_of(family).chat_text("Is the cup red?")
    image = "<|vision_start|><|image_pad|><|vision_end|>" if family == "qwen3_vl" else "<IMG_CONTEXT>\n"
    assert text == f"<|im_start|>user\n{image}Is the cup red?<|im_end|>\n<|im_start|>assistant\n"


def test_a_processor_without_chat_template_is_refused():
    model, processor = tiny_qwen2_vl()
    template = processor.chat_template
    processor.chat_template = None
    try:
        with pytest.raises(UserError, match="has no chat template"):
            TransformersJudge.from_models(model, processor, spec=REGISTRY["qwen2_5_vl_7b"])
    finally:
        processor.chat_template = template


def test_model_id_folder_loads_through_the_auto_classes(tmp_path):
    model, processor = tiny_qwen2_vl()
    model.save_pretrained(tmp_path / "tiny-qwen2-vl")
    processor.save_pretrained(tmp_path / "tiny-qwen2-vl")
    judge = TransformersJudge(custom_spec(str(tmp_path / "tiny-qwen2-vl"), "tiny"), device="cpu", batch_size=2)
    assert judge.dtype_name == "float32" and judge.model is None
    judge.load()
    assert type(judge.model).__name__ == "Qwen2VLForConditionalGeneration"
    reference = judge_of("qwen2_vl").yes_probability(IMAGES[:2], QUESTIONS[:2])
    assert judge.yes_probability(IMAGES[:2], QUESTIONS[:2]) == pytest.approx(reference, abs=1e-5)


def test_vqascore_adapter_normalises_yes_against_no(monkeypatch):
    """t2v-metrics is optional (not installed here): a stand-in module checks the adapter's contract with it."""
    import types

    from judges.vqascore import VQAScoreJudge

    calls = []

    class FakeModel:
        def forward(self, paths, texts, question_template, answer_template):
            calls.append((len(paths), list(texts), question_template, answer_template))
            assert all(Path(path).is_file() for path in paths)
            return torch.tensor([0.6, 0.2][: len(texts)] if answer_template == "Yes" else [0.2, 0.6][: len(texts)])

    class FakeVQAScore:
        def __init__(self, model, device):
            self.model_name, self.device, self.model = model, device, FakeModel()

    monkeypatch.setitem(sys.modules, "t2v_metrics", types.SimpleNamespace(VQAScore=FakeVQAScore))
    judge = VQAScoreJudge(REGISTRY["vqascore"], device="cpu", batch_size=2)
    probabilities = judge.yes_probability(IMAGES[:3], QUESTIONS[:3])
    assert judge.scorer.model_name == "clip-flant5-xxl" and judge.dtype_name == "float32"
    assert probabilities == pytest.approx([0.75, 0.25, 0.75])
    assert calls[0] == (2, QUESTIONS[:2], "{}", "Yes") and calls[1] == (2, QUESTIONS[:2], "{}", "No")
    assert [call[0] for call in calls] == [2, 2, 1, 1]
