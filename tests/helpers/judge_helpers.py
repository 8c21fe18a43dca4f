"""Tiny random-weight VLM judges of the real transformers classes, built offline for tests.

Each builder returns ``(model, processor)`` of one family the judge registry names:
Qwen2-VL, Qwen2.5-VL, Qwen3-VL (``Qwen*VLForConditionalGeneration`` with their own processors)
and InternVL3 / InternVL3.5 (``InternVLForConditionalGeneration``, Qwen2 / Qwen3 text models).
Tokenizers are byte-level BPE built in memory (no files, no network) with single tokens for
the yes/no variants a real Qwen vocabulary has ("yes", "Yes", " yes", " Yes", "YES", ...)
but not " YES" / " NO", which split into two tokens, so the token search must skip them.
Random weights make the answers arbitrary: tests check mechanics, never what a model sees.
"""

from __future__ import annotations

from functools import cache

import torch
from PIL import Image

# Single-token words of the tiny vocabulary; "Ġ" is byte-level BPE's leading space.
YES_NO_WORDS = ("yes", "Yes", "YES", "no", "No", "NO")
SPACED_WORDS = ("yes", "Yes", "no", "No")  # " yes", " Yes", " no", " No" are single tokens too
QWEN_SPECIAL = ("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
INTERNVL_SPECIAL = ("<|im_start|>", "<|im_end|>", "<img>", "</img>", "<IMG_CONTEXT>", "<video>")

# The structure of the real chat templates (ChatML), shortened: user turns with an image
# placeholder, then the assistant's generation prompt.
QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
INTERNVL_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for content in message['content'] %}"
    "{% if content['type'] == 'image' %}<IMG_CONTEXT>\n"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def tiny_vocabulary() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """(vocab, merges): the 256 byte-level symbols plus merges that make the yes/no words."""
    from tokenizers import pre_tokenizers

    vocab = {"<|endoftext|>": 0}
    for symbol in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[symbol] = len(vocab)
    merges: list[tuple[str, str]] = []
    for word in YES_NO_WORDS:
        current = word[0]
        for character in word[1:]:
            merges.append((current, character))
            current += character
            vocab.setdefault(current, len(vocab))
    for word in SPACED_WORDS:
        merges.append(("Ġ", word))
        vocab["Ġ" + word] = len(vocab)
    return vocab, merges


def tiny_tokenizer(special: tuple[str, ...], **extra):
    """A Qwen2Tokenizer (byte-level BPE, the class of every judge here) built in memory."""
    from transformers import Qwen2Tokenizer

    vocab, merges = tiny_vocabulary()
    return Qwen2Tokenizer(vocab=vocab, merges=merges, additional_special_tokens=list(special), **extra)


def _text_config(vocab_size: int, **extra) -> dict:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "intermediate_size": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "max_position_embeddings": 512,
        "pad_token_id": 0,
        "bos_token_id": 0,
        "eos_token_id": 0,
        **extra,
    }


def _qwen_ids(tokenizer) -> dict[str, int]:
    ids = tokenizer.convert_tokens_to_ids
    return {
        "image_token_id": ids("<|image_pad|>"),
        "video_token_id": ids("<|video_pad|>"),
        "vision_start_token_id": ids("<|vision_start|>"),
        "vision_end_token_id": ids("<|vision_end|>"),
    }


def _qwen_processor(processor_class, tokenizer, patch_size: int, merge_size: int):
    from transformers import Qwen2VLImageProcessor, Qwen2VLVideoProcessor, Qwen3VLVideoProcessor

    side = patch_size * merge_size * 2  # every image becomes a 2x2 grid of merged patches
    image_processor = Qwen2VLImageProcessor(
        patch_size=patch_size,
        merge_size=merge_size,
        temporal_patch_size=2,
        size={"shortest_edge": side * side, "longest_edge": side * side},
    )
    video_class = Qwen3VLVideoProcessor if processor_class.__name__ == "Qwen3VLProcessor" else Qwen2VLVideoProcessor
    return processor_class(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=video_class(patch_size=patch_size, merge_size=merge_size, temporal_patch_size=2),
        chat_template=QWEN_CHAT_TEMPLATE,
    )


@cache
def tiny_qwen2_vl():
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(QWEN_SPECIAL)
    text = _text_config(len(tokenizer), rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1]})
    config = Qwen2VLConfig(
        text_config=text,
        vision_config={
            "depth": 2,
            "embed_dim": 32,
            "hidden_size": 32,
            "num_heads": 4,
            "mlp_ratio": 2,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
        },
        **_qwen_ids(tokenizer),
    )
    model = Qwen2VLForConditionalGeneration(config).eval()
    return model, _qwen_processor(Qwen2VLProcessor, tokenizer, patch_size=14, merge_size=2)


@cache
def tiny_qwen2_5_vl():
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(QWEN_SPECIAL)
    text = _text_config(len(tokenizer), rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1]})
    config = Qwen2_5_VLConfig(
        text_config=text,
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 37,
            "out_hidden_size": 32,
            "num_heads": 4,
            "patch_size": 14,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "window_size": 56,
            "fullatt_block_indexes": [1],
        },
        **_qwen_ids(tokenizer),
    )
    model = Qwen2_5_VLForConditionalGeneration(config).eval()
    return model, _qwen_processor(Qwen2_5_VLProcessor, tokenizer, patch_size=14, merge_size=2)


@cache
def tiny_qwen3_vl():
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLProcessor

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(QWEN_SPECIAL)
    text = _text_config(
        len(tokenizer),
        head_dim=8,
        rope_parameters={"rope_type": "default", "mrope_section": [2, 1, 1], "mrope_interleaved": True},
    )
    config = Qwen3VLConfig(
        text_config=text,
        vision_config={
            "depth": 2,
            "hidden_size": 32,
            "intermediate_size": 32,
            "out_hidden_size": 32,
            "num_heads": 4,
            "patch_size": 16,
            "spatial_merge_size": 2,
            "temporal_patch_size": 2,
            "num_position_embeddings": 16,
            "deepstack_visual_indexes": [0, 1],
        },
        **_qwen_ids(tokenizer),
    )
    model = Qwen3VLForConditionalGeneration(config).eval()
    return model, _qwen_processor(Qwen3VLProcessor, tokenizer, patch_size=16, merge_size=2)


def _tiny_internvl(text_model_type: str):
    from transformers import (
        GotOcr2ImageProcessor,
        InternVLConfig,
        InternVLForConditionalGeneration,
        InternVLProcessor,
        InternVLVideoProcessor,
    )

    torch.manual_seed(0)
    tokenizer = tiny_tokenizer(
        INTERNVL_SPECIAL,
        extra_special_tokens={
            "start_image_token": "<img>",
            "end_image_token": "</img>",
            "context_image_token": "<IMG_CONTEXT>",
            "video_token": "<video>",
        },
    )
    text = _text_config(len(tokenizer), model_type=text_model_type)
    if text_model_type == "qwen3":
        text["head_dim"] = 8
    image_size, patch_size = 56, 14
    seq_length = (image_size // patch_size) ** 2 // 4  # downsample_ratio 0.5 → a quarter of the patches
    config = InternVLConfig(
        text_config=text,
        vision_config={
            "hidden_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "intermediate_size": 37,
            "image_size": image_size,
            "patch_size": patch_size,
        },
        image_token_id=tokenizer.convert_tokens_to_ids("<IMG_CONTEXT>"),
        image_seq_length=seq_length,
    )
    model = InternVLForConditionalGeneration(config).eval()
    image_processor = GotOcr2ImageProcessor(
        size={"height": image_size, "width": image_size}, crop_to_patches=True, min_patches=1, max_patches=2
    )
    processor = InternVLProcessor(
        image_processor=image_processor,
        tokenizer=tokenizer,
        video_processor=InternVLVideoProcessor(),
        image_seq_length=seq_length,
        chat_template=INTERNVL_CHAT_TEMPLATE,
    )
    return model, processor


@cache
def tiny_internvl3():
    """InternVL3 (a Qwen2 language model)."""
    return _tiny_internvl("qwen2")


@cache
def tiny_internvl3_5():
    """InternVL3.5 (a Qwen3 language model)."""
    return _tiny_internvl("qwen3")


TINY_BUILDERS = {
    "qwen2_vl": tiny_qwen2_vl,
    "qwen2_5_vl": tiny_qwen2_5_vl,
    "qwen3_vl": tiny_qwen3_vl,
    "internvl3": tiny_internvl3,
    "internvl3_5": tiny_internvl3_5,
}


def solid_image(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (48, 40)) -> Image.Image:
    return Image.new("RGB", size, color)
