"""The Score tab's judge panel: a VLM judge's per-question answers beside the scorer's verdict.

Off by default (a judge takes GPU memory the scorer does not need): ``serve --judge KEY
[--judge-mode pos|neg|whole]``, or env ``NEGT2I_JUDGE`` / ``NEGT2I_JUDGE_MODE`` on a Space. The
judge is built once and, on ZeroGPU, loaded at start-up in the main process, like the scorer;
its GPU function (`space.gpu_calls.gpu_judge`) takes a PIL image and a prompt record and returns a
result record. The panel shows one row per question: the words asked, P("yes"), and whether
the element counts as satisfied (p_satisfied > 0.5; a negated statement asked affirmatively
is satisfied by "no").
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr
import pandas as pd

from dataset_builder.records import PromptRecord
from evaluator.results import ResultRecord
from negt2ibench.core.errors import UsageError, UserError
from space.error_messages import error_markdown
from space.gpu_calls import JudgeOnGpu, gpu_judge, on_zero_gpu, preload_judge, zero_gpu_refusal
from space.resources import bounded_image

log = logging.getLogger(__name__)
JUDGE_ENV = "NEGT2I_JUDGE"
JUDGE_MODE_ENV = "NEGT2I_JUDGE_MODE"
JUDGE_MODES = ("pos", "neg", "whole")
JUDGE_COLUMNS = ["element", "question", "p(yes)", "p(satisfied)", "satisfied"]


def judge_frame(record: ResultRecord | None) -> pd.DataFrame:
    """One row per question the judge answered (empty without a record)."""
    rows = [
        {
            "element": q.element.replace(":", " ", 1),
            "question": q.question,
            "p(yes)": round(q.p_yes, 3),
            "p(satisfied)": round(q.p_satisfied, 3),
            "satisfied": "yes" if q.p_satisfied > 0.5 else "no",
        }
        for q in (record.questions if record is not None else [])
    ]
    return pd.DataFrame(rows, columns=JUDGE_COLUMNS)


def judge_summary(record: ResultRecord) -> str:
    verdict = "PASS" if record.passed else "FAIL"
    return (
        f"### Judge {record.evaluator}: <span class='verdict-{verdict.lower()}'>{verdict}</span>\n\n"
        f"score {record.score:.3f} (mean p(satisfied)); it passes an image when every element's p(satisfied) > 0.5. "
        f"Questions asked in `{record.evaluator.rpartition('/')[2]}` mode."
    )


def build_judge(key: str, *, device: str = "auto") -> Any:
    """The adapter of a registered judge (weights load later, on `load()` or the first question)."""
    from judges.registry import adapter_class, get_spec

    spec = get_spec(key)
    return adapter_class(spec)(spec, device=device)


@dataclass
class JudgePanel:
    """The judge's handler in the Score tab. `prompt_of(prompt_id, custom)` resolves the prompt as the scorer does."""

    key: str
    mode: str
    judge_on_gpu: JudgeOnGpu
    prompt_of: Callable[[str | None, str | None], PromptRecord]

    def layout(self) -> tuple[gr.Markdown, gr.Dataframe]:
        summary = gr.Markdown(f"Judge `{self.key}` ({self.mode} mode) answers after the scorer.", elem_id="judge")
        table = gr.Dataframe(
            headers=JUDGE_COLUMNS, label=f"Judge {self.key}: questions", interactive=False, wrap=True, visible=False
        )
        return summary, table

    def judge(self, upload: str | None, prompt_id: str | None, custom_prompt: str | None):
        """(summary, table); nothing when the upload or prompt is unusable (the scorer's panel says why)."""
        from evaluator.images import ImageError, load_image

        if not upload:
            return "", judge_frame(None)
        try:
            image = bounded_image(load_image(upload))  # as the scorer sees it
            prompt = self.prompt_of(prompt_id, custom_prompt)
        except (ImageError, UserError):
            return "", judge_frame(None)
        try:
            record = self.judge_on_gpu(image, prompt)
        except UserError as error:  # e.g. MissingWeightsError
            return error_markdown(f"judge {self.key}: {error}"), judge_frame(None)
        except Exception as error:  # noqa: BLE001 - shown as one line; the traceback goes to the log
            refused = zero_gpu_refusal(error)  # ZeroGPU's quota or queue: its reason and what to do
            if refused is not None:
                return error_markdown(f"judge {self.key}: {refused}"), judge_frame(None)
            log.exception("judge failed")
            return error_markdown(f"judge {self.key} failed: {type(error).__name__}: {error}"), judge_frame(None)
        return judge_summary(record), judge_frame(record)


def judge_panel(
    judge: Any,
    mode: str | None,
    prompt_of: Callable[[str | None, str | None], PromptRecord],
    *,
    preload: bool | None = None,
) -> JudgePanel | None:
    """The panel for `judge` (an adapter, or a registered key; default env NEGT2I_JUDGE) in `mode`
    (default env NEGT2I_JUDGE_MODE, else pos); None when no judge is configured."""
    judge = judge if judge is not None else os.environ.get(JUDGE_ENV) or None
    if judge is None:
        return None
    mode = mode or os.environ.get(JUDGE_MODE_ENV) or "pos"
    if mode not in JUDGE_MODES:
        raise UsageError(f"judge mode must be one of {', '.join(JUDGE_MODES)}, got {mode!r}")
    adapter = build_judge(judge) if isinstance(judge, str) else judge
    if preload if preload is not None else on_zero_gpu():
        preload_judge(adapter)
    return JudgePanel(adapter.spec.key, mode, gpu_judge(adapter, mode), prompt_of)
