"""The Score tab: upload an image, pick a benchmark prompt or type one, and see the evaluator's
annotated image, verdict and per-statement table (and a VLM judge's answers when one is set).

API names (for gradio_client): ``score`` (image, prompt id, typed prompt → annotated image,
verdict, table, result JSON) and, with a judge, ``judge`` (the same inputs → its summary and table).
The handlers are `Handlers.score` and the `JudgePanel`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

from ..handlers import Handlers
from ..judge_panel import JudgePanel
from ..resources import SCORE_CONCURRENCY
from ..views import VERDICT_COLUMNS


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


def build(on: Handlers, prompt_choices: Sequence[tuple[str, str]], judging: JudgePanel | None) -> None:
    """The Score tab; `prompt_choices`: (label, prompt id) of every prompt; `judging`: the judge
    panel shown beside the verdict (None: no judge)."""
    with gr.Tab("Score an image", id="score"):
        with gr.Row():
            with gr.Column():
                upload = image_upload(label="Image (PNG / JPEG)", sources=["upload", "clipboard"], height=320)
                prompt_pick = gr.Dropdown(
                    list(prompt_choices),
                    label="Benchmark prompt (type an id or words to search)",
                    filterable=True,
                    allow_custom_value=True,
                )
                custom = gr.Textbox(
                    label="…or a prompt in the benchmark grammar",
                    lines=2,
                    placeholder="a photo of a cat and a dog, where the cat is not left of the dog",
                )
                score_button = gr.Button("Score", variant="primary")
            with gr.Column():
                annotated = gr.Image(label="Annotated", format="png", type="pil", interactive=False)
                verdict = gr.Markdown(elem_id="verdict")
        verdicts = gr.Dataframe(headers=VERDICT_COLUMNS, label="Objects and statements", interactive=False, wrap=True)
        if judging is not None:  # a VLM judge's answers beside the verdict (off by default)
            judge_outputs = judging.layout()
            score_button.click(
                judging.judge,
                [upload, prompt_pick, custom],
                judge_outputs,
                api_name="judge",
                concurrency_limit=SCORE_CONCURRENCY,
            )
        result_file = gr.File(label="Result JSON")
        score_button.click(
            on.score,
            [upload, prompt_pick, custom],
            [annotated, verdict, verdicts, result_file],
            api_name="score",
            concurrency_limit=SCORE_CONCURRENCY,  # with one event per client at once (`on.slots`)
        )
