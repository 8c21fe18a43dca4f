"""The shipped result files of `negt2ibench examples` (validation/data/examples/), made by the real code.

`results/{preset}.jsonl`: `evaluator.pipeline.score_images` (the real pipeline, rules and records)
on the example pictures (`validation.examples.write_pictures`), with the tiny random-weight models
of `tests/helpers/perception_helpers.py` standing in for the weights. `geneval_results.jsonl`: the
real GenEval scorer (`GenEvalEvaluator.score_source`) on the GenEval example pictures, with the tiny
RF-DETR and CLIP. Random weights: the verdicts say nothing about any model (the examples' README
says so). `tests/validation/test_examples.py` checks that the pipeline still writes these verdicts.

Regenerate (after a deliberate change of the records):  .venv/bin/python -m tests.helpers.examples_data
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BATCH_SIZE = 4


def score_examples(preset: str, pictures: Path, prompts: list, out: Path) -> None:
    from evaluator.config import PRESETS
    from evaluator.pipeline import score_images
    from tests.helpers.perception_helpers import tiny_perception
    from validation.examples import EXAMPLE_KEY

    config = PRESETS[preset]
    score_images(
        pictures,
        prompts,
        tiny_perception(config, batch_size=BATCH_SIZE),
        out_path=out,
        config=config,
        model_key=EXAMPLE_KEY,
        batch_size=BATCH_SIZE,
        progress=False,
        num_workers=0,
    )


def score_geneval_examples(images: Path, out: Path) -> None:
    """GenEval lines of IMAGES (a relative path: the lines' `filename`s are as the examples' README runs them)."""
    from evaluator.geneval import PRESETS
    from evaluator.geneval.perception import GenEvalPerception
    from negt2ibench.geneval_api import GenEvalEvaluator
    from tests.helpers.geneval_helpers import tiny_clip
    from tests.helpers.perception_helpers import tiny_detector
    from validation.examples import EXAMPLE_KEY

    config = PRESETS["geneval_rfdetr"].replace(detector_resolution=96)
    perception = GenEvalPerception.from_models(config, detector=tiny_detector(), clip=tiny_clip())
    evaluator = GenEvalEvaluator(config, perception=perception)
    evaluator.score_source(images, out=out, model_key=EXAMPLE_KEY, progress=False, num_workers=0)


def regenerate(data: Path) -> None:
    import torch

    from dataset_builder.loading import load_prompts
    from validation.examples import EXAMPLE_PRESETS, write_geneval_pictures, write_pictures

    torch.set_num_threads(1)
    (data / "results").mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        chosen = write_pictures(Path(scratch) / "pictures", load_prompts())
        for preset in EXAMPLE_PRESETS:
            target = data / "results" / f"{preset}.jsonl"
            target.unlink(missing_ok=True)
            score_examples(preset, Path(scratch) / "pictures", chosen, target)
        here = Path.cwd()
        os.chdir(scratch)
        try:
            write_geneval_pictures(Path("geneval") / "images")
            (data / "geneval_results.jsonl").unlink(missing_ok=True)
            score_geneval_examples(Path("geneval") / "images", data / "geneval_results.jsonl")
        finally:
            os.chdir(here)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))  # run as a script: `tests.helpers` from the checkout
    from validation.examples import DATA

    regenerate(DATA)
