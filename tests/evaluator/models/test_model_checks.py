"""What the real checkpoints need that random tiny models cannot show: RF-DETR's threshold and COCO head,
SigLIP 2's unmasked text tower and its float32 scoring."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from evaluator.config import PRESETS, EvaluatorConfig
from evaluator.models.attributes import AttributeScorer
from evaluator.models.detector import Detector, check_coco_checkpoint, select_class_detections
from evaluator.perception import ModelPerception
from negt2ibench.core.errors import UserError
from tests.helpers.perception_helpers import tiny_depth, tiny_models, tiny_sam, tiny_siglip

# -- RF-DETR ----------------------------------------------------------------------------------


def test_a_score_equal_to_the_threshold_is_dropped_as_rfdetr_predict_drops_it():
    probabilities = np.zeros((3, 4))
    probabilities[:, 1] = [0.5, 0.25, 0.125]  # exact in binary: no rounding decides
    picked = select_class_detections(probabilities, {"a": 1}, num_select=300, threshold=0.25, per_class_cap=16)
    assert picked["a"] == [(0, 0.5)]
    picked = select_class_detections(probabilities, {"a": 1}, num_select=300, threshold=0.124, per_class_cap=16)
    assert picked["a"] == [(0, 0.5), (1, 0.25), (2, 0.125)]


def _fresh_nano():
    from rfdetr import RFDETRSegNano

    return RFDETRSegNano(pretrain_weights=None, resolution=96, device="cpu")


@pytest.mark.slow
def test_the_coco_head_is_accepted():
    detector, *_ = tiny_models()
    check_coco_checkpoint(detector)  # 91 logits and COCO's names: no error
    assert (
        Detector(detector, presence_threshold=0.03, per_class_cap=16, device=torch.device("cpu")).class_ids["cat"] == 17
    )


@pytest.mark.slow
def test_a_checkpoint_with_another_class_count_is_refused():
    model = _fresh_nano()
    model.model.reinitialize_detection_head(5)
    with pytest.raises(UserError, match="has 5 class logits, not COCO's 91"):
        Detector(model, presence_threshold=0.03, per_class_cap=16, device=torch.device("cpu"))


@pytest.mark.slow
def test_a_checkpoint_with_other_class_names_is_refused():
    from rfdetr.assets.coco_classes import COCO_CLASS_NAMES

    model = _fresh_nano()
    model.model.class_names = ["apple"] + list(COCO_CLASS_NAMES[1:])
    with pytest.raises(UserError, match="class names are not COCO's \\('apple'≠'person'\\)"):
        check_coco_checkpoint(model)
    model.model.class_names = ["apple", "pear"]
    with pytest.raises(UserError, match="2 names instead of 80|'apple'≠'person'"):
        check_coco_checkpoint(model)


# -- SigLIP 2 ---------------------------------------------------------------------------------


class RecordingSiglip(torch.nn.Module):
    """The tiny SigLIP, recording the keyword arguments of `get_text_features`."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.text_calls: list[set[str]] = []

    def get_text_features(self, **kwargs):
        self.text_calls.append(set(kwargs))
        return self.inner.get_text_features(**kwargs)

    def get_image_features(self, **kwargs):
        return self.inner.get_image_features(**kwargs)


def test_text_tower_gets_input_ids_only_although_the_tokenizer_returns_a_mask():
    model, processor = tiny_siglip()
    texts = ["a red cup", "a blue cup"]  # shorter than max_length: padded, so a mask would matter
    tokens = processor(text=texts, padding="max_length", max_length=16, truncation=True, return_tensors="pt")
    assert tokens["attention_mask"].min() == 0  # the processor hands out a mask the model must not get
    recording = RecordingSiglip(model)
    scorer = AttributeScorer(recording, processor, device=torch.device("cpu"), max_text_length=16)
    embeddings = scorer.text_embeddings(texts)
    assert recording.text_calls == [{"input_ids"}]

    def unit(features):
        return torch.nn.functional.normalize(features.pooler_output, dim=-1).detach().numpy()

    with torch.no_grad():
        unmasked = unit(model.get_text_features(input_ids=tokens["input_ids"]))
        masked = unit(model.get_text_features(**tokens))
    np.testing.assert_allclose(embeddings.numpy(), unmasked, atol=1e-6)
    assert np.abs(masked - unmasked).max() > 1e-3  # the mask would have changed the embeddings


def test_attribute_dtype_is_float32_by_default_and_in_the_config_hash():
    current = PRESETS["current"]
    assert current.attribute_dtype == "float32"
    assert all(config.attribute_dtype == "float32" for config in PRESETS.values())
    bf16 = current.replace(attribute_dtype="bfloat16")
    assert bf16.config_hash != current.config_hash  # it can change verdicts: results say which was used
    assert "attribute_dtype" in EvaluatorConfig.__dataclass_fields__


@pytest.mark.slow
def test_siglip_runs_in_float32_unless_the_config_asks_for_bf16():
    # Models of its own: a cast to bf16 and back rounds the weights, and tiny_models() are shared.
    detector, sam, siglip, depth = tiny_models()[0], tiny_sam(), tiny_siglip(), tiny_depth()
    models = dict(detector=detector, sam=sam, siglip=siglip, depth=depth)
    # A GPU-like perception in bf16 (the dtype only; the tiny models run on the CPU here).
    perception = ModelPerception.from_models(PRESETS["current"], **models, dtype=torch.bfloat16)
    assert perception._attributes.dtype == torch.float32
    assert perception._segmenter.dtype == torch.bfloat16 and perception._depth.dtype == torch.bfloat16
    opted = ModelPerception.from_models(PRESETS["current"].replace(attribute_dtype="bfloat16"), **models)
    assert opted._attributes.dtype == torch.float32  # float32 perception: nothing to lower
    opted = ModelPerception.from_models(
        PRESETS["current"].replace(attribute_dtype="bfloat16"), **models, dtype=torch.bfloat16
    )
    assert opted._attributes.dtype == torch.bfloat16
