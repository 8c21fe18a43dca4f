"""What `negt2ibench geneval score` costs per image on this CPU: tiny models, and the full-size architectures
of the `geneval` preset (Mask2Former Swin-S COCO instance, CLIP ViT-L/14) with random weights (the same
compute as the real weights).

Run by hand:  .venv/bin/python benchmarks/geneval_cost.py [--images 24] [--full-images 4] [--size 512]

Reports seconds per image of `score_geneval` end to end (decoding, the engine, the models, the verdicts,
the JSONL), one GenEval prompt per task in turn:
  tiny geneval         the test suite's tiny Mask2Former + CLIP, GenEval's 1333×800 input
  tiny geneval_rfdetr  the tiny RF-DETR Seg Nano at 96 px + CLIP
  full                 Mask2Former Swin-S at 1333×800 + CLIP ViT-L/14, random weights; a forward hook on
                       the class head makes K queries (default 1) detect each class of the prompts scored
                       (about a dozen), so masks are upsampled and colour clauses run CLIP: more
                       candidates than a real image with two objects has, an upper bound
and, for the full models, the parts: the detector's forward, its post-processing, one CLIP crop.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import torch  # noqa: E402


def full_mask2former():
    from transformers import (
        Mask2FormerConfig,
        Mask2FormerForUniversalSegmentation,
        Mask2FormerImageProcessor,
        SwinConfig,
    )

    from tests.helpers.geneval_helpers import coco_labels

    labels = coco_labels()
    backbone = SwinConfig(  # Swin-S, as facebook/mask2former-swin-small-coco-instance
        embed_dim=96, depths=[2, 2, 18, 2], num_heads=[3, 6, 12, 24], window_size=7,
        out_features=["stage1", "stage2", "stage3", "stage4"],
    )  # fmt: skip
    config = Mask2FormerConfig(
        backbone_config=backbone, id2label=labels, label2id={name: index for index, name in labels.items()}
    )
    return Mask2FormerForUniversalSegmentation(config).eval(), Mask2FormerImageProcessor()


def full_clip():
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel

    from tests.helpers.generation_helpers import tiny_tokenizer

    tokenizer = tiny_tokenizer()  # the text tower runs once per class and colour (cached): its vocabulary is moot
    config = CLIPConfig(  # ViT-L/14, as openai/clip-vit-large-patch14
        text_config=dict(vocab_size=len(tokenizer), hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                         num_attention_heads=12, max_position_embeddings=77, bos_token_id=0, eos_token_id=1,
                         pad_token_id=1),
        vision_config=dict(image_size=224, patch_size=14, hidden_size=1024, intermediate_size=4096,
                           num_hidden_layers=24, num_attention_heads=16),
        projection_dim=768,
    )  # fmt: skip
    return CLIPModel(config).eval(), tokenizer, CLIPImageProcessorPil()


def make_objects_visible(model, per_class: int, wanted: list[str]) -> None:
    """A forward hook on the class head: queries 0 … K·n−1 predict the wanted classes (K each)."""
    from evaluator.models.detector import COCO_TO_BENCHMARK_NAME

    names = {COCO_TO_BENCHMARK_NAME.get(n, n): i for i, n in model.config.id2label.items()}

    def hook(module, inputs, output):
        output = output.clone()
        for number, name in enumerate(wanted):
            rows = slice(number * per_class, (number + 1) * per_class)
            output[:, rows, names[name]] = 12.0
        return output

    model.class_predictor.register_forward_hook(hook)


def first_of_each_task(prompts):
    tasks = {}
    for prompt in prompts:
        tasks.setdefault(prompt.tag, prompt)
    return list(tasks.values())


def score_folder(perception, config, prompts, chosen, images: int, size: int, folder: Path) -> float:
    """Seconds per image of `score_geneval` on IMAGES images of the CHOSEN prompts (in turn)."""
    from evaluator.geneval.scoring import score_geneval
    from evaluator.geneval.sources import resolve_geneval_source
    from tests.helpers.geneval_helpers import write_geneval_folder

    write_geneval_folder(folder, chosen, samples=-(-images // len(chosen)), size=(size, size))
    source = resolve_geneval_source(folder, prompts)
    started = time.perf_counter()
    summary = score_geneval(source, perception, out_path=folder / "r.jsonl", config=config, progress=False,
                            num_workers=0, batch_size=4, limit=images)  # fmt: skip
    assert summary.errors == 0, summary.error_reasons
    return (time.perf_counter() - started) / summary.scored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=24)
    parser.add_argument("--full-images", type=int, default=4)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--per-class", type=int, default=1)
    args = parser.parse_args()

    from evaluator.geneval import PRESETS
    from evaluator.geneval.perception import GenEvalPerception
    from evaluator.geneval.prompts import load_geneval_prompts
    from evaluator.models.clip_colors import colour_crop
    from tests.helpers.geneval_helpers import tiny_clip, tiny_mask2former
    from tests.helpers.perception_helpers import random_image, tiny_detector

    prompts = load_geneval_prompts()
    figures = {"threads": torch.get_num_threads(), "size": args.size}
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        tiny = GenEvalPerception.from_models(PRESETS["geneval"], detector=tiny_mask2former(), clip=tiny_clip())
        general = first_of_each_task(prompts)
        colour = [p for p in prompts if p.tag in ("colors", "color_attr")][:2]
        figures["tiny_geneval_s_per_image"] = score_folder(
            tiny, PRESETS["geneval"], prompts, general, args.images, args.size, scratch / "tiny"
        )
        rf_config = PRESETS["geneval_rfdetr"].replace(detector_resolution=96)
        rf = GenEvalPerception.from_models(rf_config, detector=tiny_detector(), clip=tiny_clip())
        figures["tiny_geneval_rfdetr_s_per_image"] = score_folder(
            rf, rf_config, prompts, general, args.images, args.size, scratch / "tiny_rf"
        )

        model, processor = full_mask2former()
        wanted = sorted({c["class"] for p in general + colour for c in p.metadata["include"]})
        make_objects_visible(model, args.per_class, wanted)
        figures["full_visible_classes"] = len(wanted)
        full = GenEvalPerception.from_models(PRESETS["geneval"], detector=(model, processor), clip=full_clip())
        image = random_image(0, (args.size, args.size))
        detector = full.detector
        detector.detect([image], min_score=0.3)  # warm-up
        started = time.perf_counter()
        tensor = detector._input(image)
        padded = torch.zeros((1, 3, -(-tensor.shape[1] // 32) * 32, -(-tensor.shape[2] // 32) * 32))
        padded[0, :, : tensor.shape[1], : tensor.shape[2]] = tensor
        with torch.inference_mode():
            outputs = model(pixel_values=padded)
        forward = time.perf_counter() - started
        started = time.perf_counter()
        with torch.inference_mode():
            sizes = (tuple(padded.shape[-2:]), tuple(tensor.shape[-2:]), image.size)
            found = detector._instances(outputs.class_queries_logits[0], outputs.masks_queries_logits[0], *sizes, 0.3)
        figures["full_detector_forward_s"] = forward
        figures["full_postprocess_s"] = time.perf_counter() - started
        figures["full_instances_per_image"] = len(found)
        crop = colour_crop(image, found[0].mask, found[0].box, bgcolor="#999", crop=True)
        full.colors.classify([crop], "dog", PRESETS["geneval"].colors, PRESETS["geneval"].color_templates)  # warm-up
        started = time.perf_counter()
        full.colors.classify([crop], "dog", PRESETS["geneval"].colors, PRESETS["geneval"].color_templates)
        figures["full_clip_s_per_crop"] = time.perf_counter() - started
        figures["full_geneval_s_per_image"] = score_folder(
            full, PRESETS["geneval"], prompts, general, args.full_images, args.size, scratch / "full"
        )
        figures["full_colour_prompts_s_per_image"] = score_folder(
            full, PRESETS["geneval"], prompts, colour, args.full_images, args.size, scratch / "full_colour"
        )
    figures["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in figures.items()}, indent=2))


if __name__ == "__main__":
    main()
