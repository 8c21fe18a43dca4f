"""The prompt filters the Explore and Compare tabs both show, built in one place: category, setting
(P:N), load and object, in one row, in the order `prompt_views.filter_prompts` takes them."""

from __future__ import annotations

import gradio as gr

from dataset_builder.vocabulary import CATEGORIES, LOADS, OBJECT_CLASSES
from space.prompt_views import ANY, SETTING_CHOICES


def prompt_filters() -> list[gr.Dropdown]:
    """The four filters, each at `any`, in a row of the open Blocks.

    Returns:
        [category, setting, load, object]: an event's inputs for `prompt_views.filter_prompts`.
    """
    with gr.Row():
        category = gr.Dropdown([ANY, *CATEGORIES], value=ANY, label="Category")
        setting = gr.Dropdown([(ANY, ANY), *SETTING_CHOICES], value=ANY, label="Setting (P:N)")
        load = gr.Dropdown([ANY, *(str(load) for load in LOADS)], value=ANY, label="Load")
        obj = gr.Dropdown([ANY, *OBJECT_CLASSES], value=ANY, label="Object", filterable=True)
    return [category, setting, load, obj]
