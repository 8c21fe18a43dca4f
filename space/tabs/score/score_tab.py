"""The Score tab: upload an image, pick a benchmark prompt or type one, and see the evaluator's
annotated image, verdict and per-statement table (and a VLM judge's answers when one is set).
A notice above it, read on every page load, says when the scorer cannot run here (its weights
missing, and how to get them) or when a stand-in scores in its place; a `ScoreExample` (the
demo's) fills the tab with a picture, its prompt and a stored verdict, labelled as what it is.

API names (for gradio_client): ``score`` (image, prompt id, typed prompt → annotated image,
verdict, table, result JSON) and, with a judge, ``judge`` (the same inputs → its summary and table).
The handlers are `ScoreHandlers.score` (`score_handlers`) and the `JudgePanel`'s (`judge_panel`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

from space.filled import shown_if_filled
from space.resources import SCORE_CONCURRENCY
from space.verdict_views import VERDICT_COLUMNS

from .judge_panel import JudgePanel
from .score_handlers import ScoreHandlers
from .score_views import ScoreExample


def image_upload(**kwargs: Any) -> gr.Image:
    """An image input that shows the picture and hands the handler the uploaded file as it is, so a
    file that is not an image gets the handler's clear message, not a decoding error in gradio.

    (The method is replaced on the instance: a subclass of a gradio component makes gradio write
    a `.pyi` stub beside this module.)"""
    component = gr.Image(type="filepath", **kwargs)

    def uploaded_file(payload: Any) -> Any:
        if payload is not None and getattr(payload, "path", None) and not str(payload.url or "").startswith("data:"):
            return str(payload.path)
        return gr.Image.preprocess(component, payload)

    component.preprocess = uploaded_file  # type: ignore[method-assign]
    return component


def _inputs(
    prompt_choices: Sequence[tuple[str, str]], example: ScoreExample | None
) -> tuple[gr.Image, gr.Dropdown, gr.Textbox, gr.Button]:
    """The upload, the prompt picker, the typed prompt and the Score button, in the open column."""
    upload = image_upload(
        value=example.image if example else None,
        label="Image (PNG / JPEG)",
        sources=["upload", "clipboard"],
        height=320,
    )
    prompt_pick = gr.Dropdown(
        list(prompt_choices),
        value=example.prompt_id if example else None,
        label="Benchmark prompt (type an id or words to search)",
        filterable=True,
        allow_custom_value=True,
    )
    custom = gr.Textbox(
        label="…or a prompt in the benchmark grammar",
        lines=2,
        placeholder="a photo of a cat and a dog, where the cat is not left of the dog",
    )
    return upload, prompt_pick, custom, gr.Button("Score", variant="primary")


def build(
    on: ScoreHandlers,
    prompt_choices: Sequence[tuple[str, str]],
    judging: JudgePanel | None,
    example: ScoreExample | None = None,
) -> None:
    """The Score tab; `prompt_choices`: (label, prompt id) of every prompt; `judging`: the judge
    panel shown beside the verdict (None: no judge); `example`: what it shows before a score."""
    with gr.Tab("Score an image", id="score"):
        gr.Markdown(on.scorer_notice, elem_id="score-notice")  # a callable value: read on every page load
        with gr.Row():
            with gr.Column():
                upload, prompt_pick, custom, score_button = _inputs(prompt_choices, example)
            with gr.Column():
                annotated = gr.Image(
                    example.drawn if example else None,
                    label="Annotated",
                    format="png",
                    type="pil",
                    interactive=False,
                    visible=example is not None,  # shown once there is a verdict to draw
                )
                verdict = gr.Markdown(example.summary if example else "", elem_id="verdict")
        verdicts = gr.Dataframe(
            example.table if example else None,
            headers=VERDICT_COLUMNS,
            label="Objects and statements",
            interactive=False,
            wrap=True,
            visible=example is not None,
        )
        if judging is not None:  # a VLM judge's answers beside the verdict (off by default)
            judge_outputs = judging.layout()
            score_button.click(
                judging.judge,
                [upload, prompt_pick, custom],
                judge_outputs,
                api_name="judge",
                concurrency_limit=SCORE_CONCURRENCY,
            ).then(shown_if_filled, judge_outputs[1], judge_outputs[1], api_name="internal", api_visibility="private")
        result_file = gr.File(label="Result JSON", visible=False)
        shown = [annotated, verdicts, result_file]
        score_button.click(
            on.score,
            [upload, prompt_pick, custom],
            [annotated, verdict, verdicts, result_file],
            api_name="score",
            concurrency_limit=SCORE_CONCURRENCY,  # with one event per client at once (`on.slots`)
        ).then(shown_if_filled, shown, shown, api_name="internal", api_visibility="private")
