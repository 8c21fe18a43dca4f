"""Tiny random-weight versions of the four perception models, built offline for tests.

Random weights make detections arbitrary, so tests built on these check mechanics (filtering,
batching, resume, error paths), never what a real model would see.
"""

from __future__ import annotations

import string
from functools import cache

import numpy as np
import torch
from PIL import Image

from evaluator.perception import ModelPerception  # bound here: CLI tests replace the module attribute

# Classes the tiny detector is biased to "see" (random weights alone detect almost nothing).
VISIBLE_CLASSES = ("cup", "tv remote", "cat", "dog", "bus", "car", "bench", "bowl", "sheep")


def tiny_detector(visible: tuple[str, ...] = VISIBLE_CLASSES):
    """RF-DETR Seg Nano at 96 px with random weights (no download: pretrain_weights=None).

    The class head's bias is raised for `visible` and lowered for every other class, so these
    classes are detected (with query-dependent scores) and the rest never are.
    """
    from rfdetr import RFDETRSegNano

    from evaluator.models.detector import benchmark_class_ids

    torch.manual_seed(0)
    model = RFDETRSegNano(pretrain_weights=None, resolution=96, device="cpu")
    head = model.model.model.class_embed
    ids = benchmark_class_ids()
    with torch.no_grad():
        head.weight.mul_(0.2)
        head.bias.fill_(-12.0)
        for name in visible:
            head.bias[ids[name]] = 2.0
    return model


@cache
def tiny_maskrcnn(visible: tuple[str, ...] = VISIBLE_CLASSES):
    """torchvision's Mask R-CNN (the c1-c4 presets' detector) with random weights, small input and few
    proposals (weights=None, weights_backbone=None: no download). As for `tiny_detector`, the class
    head favours `visible` (softmax scores of about 1/len(visible)), so those classes are detected."""
    from evaluator.config import PRESETS
    from evaluator.models.maskrcnn import build_maskrcnn, coco_class_ids

    torch.manual_seed(0)
    model = build_maskrcnn(
        PRESETS["c2"], min_size=32, max_size=48, rpn_pre_nms_top_n_test=50, rpn_post_nms_top_n_test=10
    ).eval()
    head = model.roi_heads.box_predictor.cls_score
    ids = coco_class_ids()
    with torch.no_grad():
        head.weight.mul_(0.05)
        head.bias.fill_(-6.0)
        for name in visible:
            head.bias[ids[name]] = 3.0
    return model


def tiny_sam():
    from transformers import (
        Sam2Config,
        Sam2HieraDetConfig,
        Sam2ImageProcessor,
        Sam2MaskDecoderConfig,
        Sam2Model,
        Sam2Processor,
        Sam2PromptEncoderConfig,
        Sam2VisionConfig,
    )

    torch.manual_seed(0)
    config = Sam2Config(
        vision_config=Sam2VisionConfig(
            backbone_config=Sam2HieraDetConfig(
                hidden_size=12, embed_dim_per_stage=[12, 24, 48, 96], blocks_per_stage=[1, 2, 7, 2], image_size=128
            ),
            backbone_channel_list=[96, 48, 24, 12],
            backbone_feature_sizes=[[32, 32], [16, 16], [8, 8]],
            fpn_hidden_size=32,
        ),
        prompt_encoder_config=Sam2PromptEncoderConfig(
            hidden_size=32, image_size=128, patch_size=16, mask_input_channels=8
        ),
        mask_decoder_config=Sam2MaskDecoderConfig(
            hidden_size=32, mlp_dim=64, num_attention_heads=4, iou_head_hidden_dim=32
        ),
    )
    model = Sam2Model(config).eval()
    processor = Sam2Processor(image_processor=Sam2ImageProcessor(size={"height": 128, "width": 128}))
    return model, processor


def _char_vocab() -> dict[str, int]:
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "▁"] + list(string.ascii_lowercase) + list("-'.,")
    return {token: index for index, token in enumerate(tokens)}


def tiny_siglip():
    from transformers import GemmaTokenizer, SiglipConfig, SiglipImageProcessor, SiglipModel, SiglipProcessor

    torch.manual_seed(0)
    vocab = _char_vocab()
    config = SiglipConfig(
        text_config=dict(
            vocab_size=len(vocab),
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
            max_position_embeddings=64,
        ),
        vision_config=dict(
            image_size=32,
            patch_size=8,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=2,
            num_attention_heads=4,
        ),
    )
    model = SiglipModel(config).eval()
    tokenizer = GemmaTokenizer(
        vocab=vocab, merges=[], unk_token="<unk>", pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )
    image_processor = SiglipImageProcessor(size={"height": 32, "width": 32})
    return model, SiglipProcessor(image_processor=image_processor, tokenizer=tokenizer)


def tiny_depth():
    from transformers import DepthAnythingConfig, DepthAnythingForDepthEstimation, Dinov2Config, DPTImageProcessor

    torch.manual_seed(0)
    config = DepthAnythingConfig(
        backbone_config=Dinov2Config(
            image_size=32,
            patch_size=16,
            hidden_size=4,
            num_hidden_layers=2,
            num_attention_heads=2,
            intermediate_size=8,
            out_features=["stage1", "stage2"],
            reshape_hidden_states=False,
        ),
        reassemble_hidden_size=4,
        patch_size=16,
        neck_hidden_sizes=[2, 2],
        fusion_hidden_size=6,
    )
    model = DepthAnythingForDepthEstimation(config).eval()
    processor = DPTImageProcessor(
        size={"height": 32, "width": 32},
        keep_aspect_ratio=True,
        ensure_multiple_of=16,
        do_pad=False,
        image_mean=[0.485, 0.456, 0.406],
        image_std=[0.229, 0.224, 0.225],
    )
    return model, processor


def random_image(seed: int, size: tuple[int, int] = (80, 64)) -> Image.Image:
    """A deterministic noisy RGB image (width, height)."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels, "RGB")


def make_prompt(category: str, objects: list[str], prompt_id: str | None = None, polarity: str = "positive"):
    """A small valid prompt record: one statement on the first object (attribute) or first two (relation)."""
    from dataset_builder.records import PromptRecord, Statement

    predicate = {
        "color": "red",
        "material": "wooden",
        "directional": "left of",
        "proximity": "near",
        "comparative": "bigger than",
        "depth": "in front of",
    }[category]
    kind = "attribute" if category in ("color", "material") else "relation"
    target = None if kind == "attribute" else objects[1]
    statement = Statement(
        index=0,
        polarity=polarity,
        subject=objects[0],
        target=target,
        predicate=predicate,
        text=f"{objects[0]} {predicate}",
    )
    num_pos, num_neg = (1, 0) if polarity == "positive" else (0, 1)
    return PromptRecord(
        prompt_id=prompt_id or f"{category}_pos{num_pos}_neg{num_neg}_000",
        group_id=f"{category}_load1_000",
        category=category,
        kind=kind,
        num_pos=num_pos,
        num_neg=num_neg,
        load=1,
        setting=f"pos{num_pos}_neg{num_neg}",
        prompt=f"a photo of {' and '.join(objects)}",
        objects=objects,
        statements=[statement],
    )


@cache
def tiny_models():
    """(detector, sam, siglip, depth), built once per test session."""
    return tiny_detector(), tiny_sam(), tiny_siglip(), tiny_depth()


def tiny_perception(config=None, batch_size: int = 8, presence_threshold: float | None = None):
    from evaluator.config import PRESETS

    config = config or PRESETS["current"]
    if presence_threshold is not None:
        config = config.replace(presence_threshold=presence_threshold)
    detector, sam, siglip, depth = tiny_models()
    if config.detector == "maskrcnn_resnet50_fpn_v2":  # the c1-c4 presets
        detector = tiny_maskrcnn()
    return ModelPerception.from_models(
        config, detector=detector, sam=sam, siglip=siglip, depth=depth, batch_size=batch_size
    )


def replace_model_perception(monkeypatch, factory) -> None:
    """Make the commands and `Evaluator` build FACTORY(config, ...) where they build `ModelPerception`.

    The models the factory makes stand in for the real weights, so the look for those weights on disk
    (`evaluator.models.weights.missing_weights`, made before any model loads) finds none missing."""
    import evaluator.models.weights as weights
    import evaluator.perception as perception_module

    monkeypatch.setattr(perception_module, "ModelPerception", factory)
    monkeypatch.setattr(weights, "missing_weights", lambda *args, **kwargs: [])
