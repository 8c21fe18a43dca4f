"""The Submit tab: upload a results JSONL with the model's name, link and images repo; the list of
submissions shows where each spot check is (a verification job's state and logs link).

API names (for gradio_client): ``submit`` (file, name, link, images repo, revision → the status
and the list) and ``submissions`` (→ the list). The handlers are `SubmitHandlers.submit` and
`SubmitHandlers.submissions` (`submit_handlers`).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION
from space.filled import filled
from space.resources import SUBMIT_CONCURRENCY

from .submit_handlers import SubmitHandlers
from .submit_views import NO_SUBMISSIONS, SUBMISSION_COLUMNS, SUBMISSION_TYPES, SUBMISSION_WIDTHS, submit_help


def build(demo: gr.Blocks, on: SubmitHandlers, *, login_button: bool) -> Any:
    """The Submit tab; `login_button`: show "Sign in with Hugging Face" (on a Space that requires it).
    Returns the submit event, which other tabs chain their own refresh to."""
    plan = on.limits.plan_for(len(on.prompts) * SAMPLES_PER_PROMPT)
    with gr.Tab("Submit", id="submit"):
        gr.Markdown(
            submit_help(
                version=EVALUATOR_VERSION,
                config_hash=on.config.config_hash,
                sample=plan.sample_size,
                tolerance=plan.max_disagreements,
                max_megabytes=on.limits.max_bytes // 2**20,
                per_day=on.limits.per_day,
                invalid_per_hour=on.limits.invalid_per_hour,
            )
        )
        if login_button:
            gr.LoginButton()
        results_upload = gr.File(label="results JSONL", file_types=[".jsonl"], type="filepath")
        with gr.Row():
            model_name = gr.Textbox(label="Model name")
            link = gr.Textbox(label="Link (paper / model card)")
        with gr.Row():
            images_repo = gr.Textbox(
                label="Images dataset (Hub repo id; split = your results' model key)",
                placeholder="org/negt2ibench-images",
            )
            revision = gr.Textbox(label="Revision", value="main")
        send = gr.Button("Submit", variant="primary")
        submit_status = gr.Markdown()
        submissions = gr.Dataframe(
            headers=SUBMISSION_COLUMNS,
            datatype=SUBMISSION_TYPES,
            column_widths=SUBMISSION_WIDTHS,
            label="Submissions",
            interactive=False,
            wrap=True,
            visible=False,
            elem_id="submissions",
        )
        none_yet = gr.Markdown(NO_SUBMISSIONS, visible=False)
        shown = [submissions, none_yet]
        private: dict[str, Any] = {"api_name": "internal", "api_visibility": "private"}
        # verification jobs run apart: the list shows where each one is (its state and logs link)
        gr.Button("Refresh the list").click(on.submissions, None, submissions, api_name="submissions").then(
            _listed, submissions, shown, **private
        )
        sent = send.click(
            on.submit,
            [results_upload, model_name, link, images_repo, revision],
            [submit_status, submissions],
            api_name="submit",
            concurrency_limit=SUBMIT_CONCURRENCY,  # one slot per client (`SubmitHandlers.submit`), so never all of them
        )
        sent.then(_listed, submissions, shown, **private)
    demo.load(on.submissions, None, submissions, **private).then(_listed, submissions, shown, **private)
    return sent


def _listed(submissions: Any) -> tuple[Any, Any]:
    """The list shown when it has a submission, else the sentence saying what fills it."""
    listed = filled(submissions)
    return gr.update(visible=listed), gr.update(visible=not listed)
