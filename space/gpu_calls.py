"""The Space's GPU side: the functions run under `@spaces.GPU` (scoring an upload, a judge's
answers), model preloading, and the spot check's batch scorer, which never runs under it.

ZeroGPU rules: each `@spaces.GPU` call runs in a worker forked from the main process, and its
arguments and return value are pickled. So the models must be loaded in the main process at
start-up (`preload_models`; models loaded inside a call would be lost after it), and only CPU
objects cross the call: a PIL image and a prompt record in, a result record and a PIL image out.
The evaluator itself never crosses: the GPU function closes over it. Off ZeroGPU the decorator
is a no-op.

Each call asks for a duration sized to its work (`space.gpu_budget`: warm-up + images × a budget
per image, or questions × a budget per question), and runs only inside a visitor's request: the
client charges a call to the quota of the visitor whose request carries it, so a call from a
background thread would spend the Space's own anonymous 2 minutes (`request_only` refuses one). A
refusal by ZeroGPU (quota spent, no GPU free) becomes one line with what to do (`zero_gpu_refusal`).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import gradio as gr
import spaces
from gradio.context import LocalContext
from PIL import Image

from dataset_builder.records import PromptRecord
from evaluator.results import ResultRecord
from negt2ibench.api import Evaluator
from negt2ibench.core.errors import MissingWeightsError, UserError

from .gpu_budget import judge_seconds, refusal_line, score_seconds

log = logging.getLogger(__name__)
F = TypeVar("F", bound=Callable[..., Any])

ScoreOnGpu = Callable[[Image.Image, PromptRecord, str, int], tuple[ResultRecord, Image.Image]]


def on_zero_gpu() -> bool:
    return bool(spaces.config.Config.zero_gpu)


class OutsideRequestError(RuntimeError):
    """A ZeroGPU call was made outside a visitor's request (a bug: it would spend the Space's own quota)."""


def request_only(function: F) -> F:
    """FUNCTION (a `spaces.GPU` function), refusing on ZeroGPU a call made outside a gradio event:
    such a call carries no visitor's token, so ZeroGPU would charge the Space's own anonymous quota."""

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        if on_zero_gpu() and LocalContext.request.get(None) is None:
            raise OutsideRequestError(
                f"{function.__name__} runs on ZeroGPU only inside a visitor's request (this call had none)"
            )
        return function(*args, **kwargs)

    return cast(F, guarded)


def zero_gpu_refusal(error: BaseException) -> str | None:
    """The line to show for a refusal by the ZeroGPU client (a `gr.Error` titled "ZeroGPU ...": quota
    spent, a duration over the maximum, no GPU free): its reason and what to do. None for any other error."""
    title = getattr(error, "title", "")
    if not isinstance(error, gr.Error) or not isinstance(title, str) or not title.startswith("ZeroGPU"):
        return None
    return refusal_line(title, str(error.message))


def fetch_missing_weights(evaluator: Evaluator) -> list[Path]:
    """Download the weights the evaluator's models need and this machine lacks (a Space on the Hub
    starts with none; it has internet): `download-models`' own download, its lines to the log. The
    files fetched (none when every weight is here, or a test double stands in for the models)."""
    from evaluator.models.weights import download

    try:
        evaluator.require_weights()
        return []
    except MissingWeightsError as missing:
        log.info("fetching the evaluator's weights (%s)", missing.one_line())
    return download(evaluator.config, evaluator.weights_dir, echo=log.info)


def preload_models(evaluator: Evaluator, *, fetch: bool = False) -> None:
    """Load every model now, in this (the main) process; on ZeroGPU this must happen at start-up.
    `fetch`: first download the weights that are missing (on a Space: `fetch_missing_weights`)."""
    try:
        if fetch:
            fetch_missing_weights(evaluator)
        evaluator.load()
    except UserError as error:  # e.g. weights missing or not downloadable: the app starts, scoring says why
        log.warning("models not loaded at start-up: %s", error)


def gpu_scorer(evaluator: Evaluator) -> ScoreOnGpu:
    """The function that scores one image and draws the verdict on it, decorated for ZeroGPU."""

    def duration(image: Image.Image, prompt: PromptRecord, model_key: str = "upload", sample_index: int = 0) -> int:
        return score_seconds(1)

    @request_only
    @spaces.GPU(duration=duration)
    def score_on_gpu(
        image: Image.Image, prompt: PromptRecord, model_key: str = "upload", sample_index: int = 0
    ) -> tuple[ResultRecord, Image.Image]:
        from evaluator.annotate import annotate

        output = evaluator.score(image, prompt, model_key=model_key, sample_index=sample_index)
        return output.record, annotate(image, output.observation, output.record)

    return score_on_gpu


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
    from judges.questions import questions_for

    def duration(image: Image.Image, prompt: PromptRecord) -> int:
        return judge_seconds(len({question.text for question in questions_for(prompt, mode)}))

    @request_only
    @spaces.GPU(duration=duration)
    def judge_on_gpu(image: Image.Image, prompt: PromptRecord) -> ResultRecord:
        from judges.runner import judge_one

        return judge_one(adapter, image, prompt, mode)

    return judge_on_gpu
