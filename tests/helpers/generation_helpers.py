"""Test fixtures for generation: a tiny random StableDiffusionPipeline built offline, and prompts."""

from __future__ import annotations

from pathlib import Path

from dataset_builder.records import PromptRecord, Statement

TINY_SIZE = 32


def tiny_tokenizer():
    """A CLIPTokenizer from an in-memory character vocabulary (no files, no network)."""
    from transformers import CLIPTokenizer

    characters = "abcdefghijklmnopqrstuvwxyz0123456789,.-'"
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for character in characters:
        vocab[character] = len(vocab)
        vocab[character + "</w>"] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=77)


def tiny_sd_pipeline(seed: int = 0, text_width: int = 16):
    """A StableDiffusionPipeline with random tiny weights (32 px, runs in ~0.1 s per image on CPU).

    `text_width` is the text encoder's hidden size and the UNet's cross-attention width."""
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    tokenizer = tiny_tokenizer()
    unet = UNet2DConditionModel(
        block_out_channels=(8, 16),
        layers_per_block=1,
        sample_size=TINY_SIZE // 4,
        in_channels=4,
        out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=text_width,
        attention_head_dim=2,
        norm_num_groups=4,
    )
    vae = AutoencoderKL(
        block_out_channels=[8, 16],
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D", "DownEncoderBlock2D"],
        up_block_types=["UpDecoderBlock2D", "UpDecoderBlock2D"],
        latent_channels=4,
        norm_num_groups=4,
        sample_size=TINY_SIZE,
    )
    text_encoder = CLIPTextModel(
        CLIPTextConfig(
            bos_token_id=0,
            eos_token_id=1,
            pad_token_id=1,
            hidden_size=text_width,
            intermediate_size=2 * text_width,
            layer_norm_eps=1e-05,
            num_attention_heads=2,
            num_hidden_layers=2,
            vocab_size=len(tokenizer),
            max_position_embeddings=77,
        )
    )
    scheduler = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipeline = StableDiffusionPipeline(
        unet=unet,
        vae=vae,
        text_encoder=text_encoder,
        tokenizer=tokenizer,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipeline.set_progress_bar_config(disable=True)
    return pipeline


def make_prompt(category: str, setting: str, number: int, text: str) -> PromptRecord:
    """One small valid prompt record (attribute kind, one positive statement)."""
    positives, negatives = (int(part[3:]) for part in setting.split("_"))
    return PromptRecord(
        prompt_id=f"{category}_{setting}_{number:03d}",
        group_id=f"{category}_load{positives + negatives}_{number:03d}",
        category=category,
        kind="attribute",
        num_pos=positives,
        num_neg=negatives,
        load=positives + negatives,
        setting=setting,
        prompt=text,
        objects=["cup"],
        statements=[
            Statement(index=0, polarity="positive", subject="cup", predicate="red", text=text),
        ],
    )


def three_prompts() -> list[PromptRecord]:
    return [
        make_prompt("color", "pos1_neg0", 0, "a photo of a red cup"),
        make_prompt("color", "pos0_neg1", 0, "a photo of a non-red cup"),
        make_prompt("material", "pos1_neg0", 1, "a photo of a glass cup"),
    ]


def write_prompts_jsonl(records: list[PromptRecord], folder: Path) -> Path:
    """Write records as a dataset folder's prompts.jsonl (what `--prompts DIR` reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prompts.jsonl"
    path.write_text("".join(record.model_dump_json() + "\n" for record in records), encoding="utf-8")
    return folder


def write_prompts_dataset(records: list[PromptRecord], folder: Path) -> Path:
    """A minimal built dataset folder: prompts.jsonl and prompts/test-*.parquet (so every config loads)."""
    from datasets import Dataset

    from dataset_builder.records import prompt_features

    write_prompts_jsonl(records, folder)
    (folder / "prompts").mkdir(exist_ok=True)
    table = Dataset.from_list([record.model_dump() for record in records], features=prompt_features())
    table.to_parquet(str(folder / "prompts" / "test-00000-of-00001.parquet"))
    return folder


JANUS_IMAGE_SIZE = 32


def tiny_janus(seed: int = 0):
    """A random JanusForConditionalGeneration (32 px images, 16 image tokens) and its JanusProcessor, offline."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        GenerationConfig,
        JanusConfig,
        JanusForConditionalGeneration,
        JanusImageProcessor,
        JanusProcessor,
        JanusVisionConfig,
        JanusVQVAEConfig,
        LlamaConfig,
        PreTrainedTokenizerFast,
    )

    special = ["<unk>", "<s>", "</s>", "<pad>", "<image_placeholder>", "<begin_of_image>", "<end_of_image>"]
    words = special + "a an photo of red cup non-red glass plastic , and the is not left right".split()
    raw = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        extra_special_tokens={
            "image_token": "<image_placeholder>",
            "boi_token": "<begin_of_image>",
            "eoi_token": "<end_of_image>",
        },
    )
    patch = 8
    image_tokens = (JANUS_IMAGE_SIZE // patch) ** 2
    config = JanusConfig(
        text_config=LlamaConfig(
            vocab_size=len(words),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=4,
            max_position_embeddings=128,
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=3,
        ),
        vision_config=JanusVisionConfig(
            hidden_size=32,
            num_hidden_layers=1,
            num_attention_heads=4,
            image_size=JANUS_IMAGE_SIZE,
            patch_size=patch,
            projection_dim=32,
            num_image_tokens=image_tokens,
        ),
        vq_config=JanusVQVAEConfig(
            embed_dim=8,
            num_embeddings=64,
            latent_channels=32,
            base_channels=32,
            channel_multiplier=[1, 1, 2, 2],
            num_res_blocks=1,
            projection_dim=32,
            image_token_embed_dim=32,
        ),
        image_token_id=4,
    )
    torch.manual_seed(seed)
    model = JanusForConditionalGeneration(config).eval()
    # What the Hub checkpoints' generation_config.json carries for image mode.
    model.generation_config = GenerationConfig(
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=3,
        guidance_scale=5.0,
        generation_kwargs={"boi_token_id": 5},
        max_length=64,
    )
    processor = JanusProcessor(
        image_processor=JanusImageProcessor(size={"height": JANUS_IMAGE_SIZE, "width": JANUS_IMAGE_SIZE}),
        tokenizer=tokenizer,
        num_image_tokens=image_tokens,
    )
    return model, processor
