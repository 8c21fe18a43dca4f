"""The Annotate tab: its layout and wiring (handlers in `space.tabs.annotate.annotate_handlers`, views in
`space.tabs.annotate.annotate_views`, the sample's images in `space.tabs.annotate.annotation_images`).

`annotation_handlers` builds the tab's handlers from the sample (``serve --annotation-sample``,
or env ``NEGT2I_ANNOTATION_SAMPLE`` on a Space); `build` lays the tab out. API names (for
gradio_client): ``annotate_start``, ``annotate_save``, ``annotate_back``, ``annotate_forward``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr

from dataset_builder.records import PromptLookup
from leaderboard.store.sqlite_store import LeaderboardStore
from space.filled import shown_if_filled
from validation.sample import SampleItem, read_sample

from . import annotate_views
from .annotate_handlers import AnnotateHandlers, Reservations
from .annotation_images import SampleImages

SAMPLE_ENV = "NEGT2I_ANNOTATION_SAMPLE"
IMAGES_ENV = "NEGT2I_ANNOTATION_IMAGES"


def annotation_handlers(
    *,
    store: LeaderboardStore,
    prompts: PromptLookup,
    sample: str | Path | Sequence[SampleItem] | None = None,
    images: str | Path | None = None,
    require_login: bool = False,
    reservations: Reservations | None = None,
) -> AnnotateHandlers | None:
    """The tab's handlers for `sample` (a sample.jsonl path or its items; default: env
    NEGT2I_ANNOTATION_SAMPLE); None when there is no sample. `images`: where the images are
    when not where the sample lines say (default: env NEGT2I_ANNOTATION_IMAGES)."""
    if sample is None:
        sample = os.environ.get(SAMPLE_ENV) or None
    if sample is None:
        return None
    images = images if images is not None else os.environ.get(IMAGES_ENV) or None
    if isinstance(sample, (str, Path)):
        items, fetcher = read_sample(sample), SampleImages(sample_path=sample, images=images)
    else:
        items, fetcher = list(sample), SampleImages(images=images)
    return AnnotateHandlers(
        sample=items,
        prompts=prompts,
        store=store,
        images=fetcher,
        require_login=require_login,
        reservations=reservations or Reservations(),
    )


def _image() -> gr.Image:
    """The image to annotate: shown once one is served (after Start)."""
    return gr.Image(
        label="Image", type="pil", format="png", interactive=False, height=560, elem_id="annotate-image", visible=False
    )


def build(demo: gr.Blocks, on: AnnotateHandlers | None, *, login_button: bool) -> None:
    """The Annotate tab, wired to `on` (without a sample: how to start one); `login_button`:
    show "Sign in with Hugging Face"."""
    with gr.Tab("Annotate", id="annotate"):
        with gr.Column(elem_id="annotate-panel"):
            gr.Markdown(annotate_views.INSTRUCTIONS)
            if on is None:
                gr.Markdown(annotate_views.no_sample_markdown())
                return
            with gr.Row(equal_height=True):
                if login_button:
                    gr.LoginButton()
                name = gr.Textbox(
                    label="Your name",
                    placeholder="the name stored with your answers",
                    visible=not on.require_login,
                    scale=4,
                )
                start = gr.Button("Start", variant="primary", elem_id="annotate-start", scale=1, min_width=120)
            progress = gr.Markdown(elem_id="annotate-progress")
            status = gr.Markdown(elem_id="annotate-status")
            with gr.Row():
                with gr.Column(scale=3):
                    image = _image()
                with gr.Column(scale=2):
                    header = gr.Markdown(
                        annotate_views.signed_out_markdown(on.require_login), elem_id="annotate-header"
                    )
                    questions = [
                        gr.Radio(
                            list(annotate_views.ANSWERS), label="question", visible=False, elem_id=f"annotate-q-{i}"
                        )
                        for i in range(on.slot_count)
                    ]
                    with gr.Row():
                        back = gr.Button("← Back", elem_id="annotate-back", min_width=80)
                        save = gr.Button("Save and next", variant="primary", elem_id="annotate-save", min_width=120)
                        forward = gr.Button("Forward →", elem_id="annotate-forward", min_width=80)
        session = gr.State({})
        outputs = [session, header, image, progress, status, *questions]
        private: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}
        start.click(on.start, [name, session], outputs, api_name="annotate_start").then(
            shown_if_filled, image, image, **private
        )
        name.submit(on.start, [name, session], outputs, **private).then(shown_if_filled, image, image, **private)
        save.click(on.save, [session, *questions], outputs, api_name="annotate_save").then(
            shown_if_filled, image, image, **private
        )
        back.click(on.back, [session], outputs, api_name="annotate_back").then(shown_if_filled, image, image, **private)
        forward.click(on.forward, [session], outputs, api_name="annotate_forward").then(
            shown_if_filled, image, image, **private
        )
        demo.load(None, None, None, js=annotate_views.KEYBOARD_JS)
