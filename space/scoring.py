"""The Space's GPU side: the scoring function run under `@spaces.GPU`, and model preloading.

ZeroGPU rules: each `@spaces.GPU` call runs in a worker forked from the main process, and its
arguments and return value are pickled. So the models must be loaded in the main process at
start-up (`preload_models`; models loaded inside a call would be lost after it), and only CPU
objects cross the call: a PIL image and a prompt record in, a result record and a PIL image out.
The evaluator itself never crosses: the GPU function closes over it. Off ZeroGPU the decorator
is a no-op.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import spaces
from PIL import Image

from dataset_builder.records import PromptRecord
from evaluator.results import ResultRecord
from negt2ibench.api import Evaluator
from negt2ibench.core.errors import UserError

log = logging.getLogger(__name__)
GPU_SECONDS = 120  # ZeroGPU's time budget for one scoring call

ScoreOnGpu = Callable[[Image.Image, PromptRecord, str, int], tuple[ResultRecord, Image.Image]]


def on_zero_gpu() -> bool:
    return bool(spaces.config.Config.zero_gpu)


def preload_models(evaluator: Evaluator) -> None:
    """Load every model now, in this (the main) process; on ZeroGPU this must happen at start-up."""
    try:
        evaluator.load()
    except UserError as error:  # e.g. weights missing: the app still starts, scoring shows the reason
        log.warning("models not loaded at start-up: %s", error)


def gpu_scorer(evaluator: Evaluator) -> ScoreOnGpu:
    """The function that scores one image and draws the verdict on it, decorated for ZeroGPU."""

    @spaces.GPU(duration=GPU_SECONDS)
    def score_on_gpu(
        image: Image.Image, prompt: PromptRecord, model_key: str = "upload", sample_index: int = 0
    ) -> tuple[ResultRecord, Image.Image]:
        from evaluator.annotate import annotate

        output = evaluator.score(image, prompt, model_key=model_key, sample_index=sample_index)
        return output.record, annotate(image, output.observation, output.record)

    return score_on_gpu


RescoreOnGpu = Callable[[list[Image.Image], list[PromptRecord], str, list[int]], list[ResultRecord]]


def gpu_batch_scorer(evaluator: Evaluator) -> RescoreOnGpu:
    """The spot check's scorer: a batch of images through `Evaluator.score_many` (the engine of
    `negt2ibench score`), one `spaces.GPU` call per batch; records only cross back."""

    @spaces.GPU(duration=GPU_SECONDS)
    def rescore_on_gpu(
        images: list[Image.Image], prompts: list[PromptRecord], model_key: str, sample_indices: list[int]
    ) -> list[ResultRecord]:
        return evaluator.score_many(
            images, prompts, model_key=model_key, sample_indices=sample_indices, progress=False, num_workers=0
        )

    return rescore_on_gpu


JudgeOnGpu = Callable[[Image.Image, PromptRecord], ResultRecord]


def preload_judge(adapter: Any) -> None:
    """Load the judge's weights now, in the main process (ZeroGPU: as `preload_models`)."""
    try:
        adapter.load()
    except UserError as error:  # the app still starts; the judge panel shows the reason
        log.warning("judge not loaded at start-up: %s", error)


def gpu_judge(adapter: Any, mode: str) -> JudgeOnGpu:
    """A judge's answers on one image in `mode` under `spaces.GPU`: a PIL image and a prompt record
    in, a result record (with every question's p_yes) out; the adapter stays in the main process."""

    @spaces.GPU(duration=GPU_SECONDS)
    def judge_on_gpu(image: Image.Image, prompt: PromptRecord) -> ResultRecord:
        from judges.runner import judge_one

        return judge_one(adapter, image, prompt, mode)

    return judge_on_gpu
