"""The NegT2IBench Space: explore the prompts, score an upload, the leaderboard, submissions, annotation.

`build_app()` lays out the Gradio Blocks and wires each event to a small handler (`handlers`),
which calls pure view builders (`views`, `leaderboard_view`). The models are an `Evaluator`
passed in (or built here, lazily); the scoring function runs under `spaces.GPU` (`scoring`:
a no-op off ZeroGPU) and only CPU objects cross it. The app's temporary folder is removed when
it closes, or at exit.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr
import matplotlib.pyplot  # noqa: F401  (see below)

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex, PromptRecord
from dataset_builder.vocabulary import CATEGORIES, OBJECT_CLASSES
from evaluator.config import EVALUATOR_VERSION
from negt2ibench.api import Evaluator
from negt2ibench.core.errors import UsageError

from .annotate_tab import annotate_tab, annotation_handlers
from .handlers import Handlers, Rechecker, WorkDir
from .judge_panel import judge_panel
from .leaderboard_view import AWAITING_COLUMNS, CAUSE_COLUMNS, LEADERBOARD_HEADERS, PAPER_ROWS_NOTE
from .scoring import gpu_scorer, on_zero_gpu, preload_models
from .store import LeaderboardStore, open_store
from .submissions import ImageSourceFactory, SubmissionLimits, hub_images
from .views import (
    ANY,
    EXPLORE_LIMIT,
    PROMPT_COLUMNS,
    SETTING_CHOICES,
    STATEMENT_COLUMNS,
    SUBMISSION_COLUMNS,
    VERDICT_COLUMNS,
    prompt_label,
    submit_help,
)

# gradio switches matplotlib's backend around every event, importing pyplot on first use; two
# first events at once then race on a half-imported module ("partially initialized module
# 'matplotlib.pyplot'"). Importing it above, before any event runs, removes the race.

PRESET = "current"  # the preset the Space scores and accepts submissions for
RECHECK_SECONDS = 30 * 60  # how often pending spot checks are retried while the app runs
# theme/css go to launch() in gradio 6; uploads above the size limit are refused before any handler runs.
LAUNCH_KWARGS: dict[str, Any] = {
    "theme": gr.themes.Soft(),
    "css": ".verdict-pass{color:#15803d}.verdict-fail{color:#b91c1c}",
    "max_file_size": f"{SubmissionLimits().max_bytes // 2**20}mb",
}


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


class SpaceBlocks(gr.Blocks):
    """The app's Blocks: closing it also removes its temporary folder and stops its rechecks."""

    def __init__(self, work_dir: WorkDir, **kwargs: Any):
        super().__init__(**kwargs)
        self.work_dir = work_dir
        self.rechecker: Rechecker | None = None

    def close(self, verbose: bool = True) -> None:
        try:
            super().close(verbose)
        finally:
            if self.rechecker is not None:
                self.rechecker.stop()
            self.work_dir.cleanup()


def build_app(
    *,
    prompts: Sequence[PromptRecord] | None = None,
    dataset: str | Path | None = None,
    store: LeaderboardStore | None = None,
    evaluator: Evaluator | None = None,
    perception: Any = None,
    open_images: ImageSourceFactory = hub_images,
    limits: SubmissionLimits | None = None,
    preload: bool | None = None,
    require_login: bool | None = None,
    annotation_sample: str | Path | Sequence[Any] | None = None,
    annotation_images: str | None = None,
    judge: Any = None,
    judge_mode: str | None = None,
    weights_dir: str | Path | None = None,
    recheck_every: float | None = RECHECK_SECONDS,
) -> gr.Blocks:
    """The Space.

    Args:
        prompts: the prompt records; else read from the built `dataset` folder; else the corpus
            built in memory.
        store: the leaderboard store; else `open_store()` (SQLite under NEGT2I_HOME or the Hub repo).
        evaluator: the models that score uploads and spot-check submissions; else an
            `Evaluator(PRESET)` whose models load on the first score. `perception` (e.g. a test
            double) builds that evaluator around it instead.
        preload: load the models now (default: when running on ZeroGPU, where it must happen in
            the main process at start-up).
        require_login: show "Sign in with Hugging Face" and refuse anonymous submissions, so the
            per-user limits key on a real account (default: when running on a Hugging Face Space).
            Annotators sign in the same way.
        annotation_sample: the Annotate tab's sample.jsonl (or its `SampleItem`s); default env
            NEGT2I_ANNOTATION_SAMPLE; `annotation_images` (env NEGT2I_ANNOTATION_IMAGES) where its images are.
        judge: a VLM judge (adapter or registered key; default env NEGT2I_JUDGE) whose answers the
            Score tab shows beside the verdict, in `judge_mode` (pos, neg or whole; env NEGT2I_JUDGE_MODE).
        weights_dir: the folder `negt2ibench download-models --dir DIR` filled (`serve --weights-dir`).
        recheck_every: retry the spot check of submissions that are not final at start-up and
            then every so many seconds, in a background thread (None: never).
    """
    if evaluator is not None and perception is not None:
        raise UsageError("pass evaluator or perception to build_app, not both")
    limits = limits or SubmissionLimits()
    if require_login is None:
        require_login = bool(os.environ.get("SPACE_ID"))
    prompts = list(prompts if prompts is not None else load_prompts(dataset))
    index = PromptIndex(prompts)
    store = store if store is not None else open_store()
    if evaluator is None:
        models = {"perception": perception} if perception is not None else {"weights_dir": weights_dir}
        evaluator = Evaluator(PRESET, prompts=index, **models)
    if preload if preload is not None else on_zero_gpu():
        preload_models(evaluator)
    config = evaluator.config
    work_dir = WorkDir()
    on = Handlers(
        prompts=prompts,
        index=index,
        store=store,
        score_on_gpu=gpu_scorer(evaluator),
        config=config,
        open_images=open_images,
        limits=limits,
        require_login=require_login,
        work_dir=work_dir,
    )
    prompt_choices = [(prompt_label(p), p.prompt_id) for p in prompts]
    annotating = annotation_handlers(
        store=store, prompts=index, sample=annotation_sample, images=annotation_images, require_login=require_login
    )
    judging = judge_panel(judge, judge_mode, on._prompt_of, preload=preload)

    with SpaceBlocks(work_dir, title="NegT2IBench") as demo:
        gr.Markdown(
            "# NegT2IBench\nDo text-to-image models respect *negation*? 4,800 prompts in 6 categories × 8 "
            "positive:negated settings, scored by a detector-based evaluator "
            f"(version {EVALUATOR_VERSION}, config `{config.config_hash}`)."
        )
        with gr.Tab("Explore", id="explore"):
            with gr.Row():
                category = gr.Dropdown([ANY, *CATEGORIES], value=ANY, label="Category")
                setting = gr.Dropdown([(ANY, ANY), *SETTING_CHOICES], value=ANY, label="Setting (P:N)")
                load = gr.Dropdown([ANY, "1", "2", "3", "4"], value=ANY, label="Load")
                obj = gr.Dropdown([ANY, *OBJECT_CLASSES], value=ANY, label="Object", filterable=True)
            count = gr.Markdown()
            table = gr.Dataframe(
                headers=PROMPT_COLUMNS,
                interactive=False,
                max_height=320,
                show_search="filter",
                label="Prompts (click a row)",
            )
            chosen = gr.Dropdown(
                prompt_choices[:EXPLORE_LIMIT], label="Prompt", filterable=True, allow_custom_value=True
            )
            detail = gr.Markdown()
            statements = gr.Dataframe(
                headers=STATEMENT_COLUMNS,
                label="Statements",
                interactive=False,
            )
            group = gr.Dataframe(
                headers=PROMPT_COLUMNS,
                label="Matched group (same content, other polarities)",
                interactive=False,
            )
            filters = [category, setting, load, obj]
            for control in filters:
                control.change(on.explore, filters, [count, table, chosen], api_name=False).then(
                    on.show_prompt, chosen, [detail, statements, group], api_name=False
                )
            table.select(on.pick_row, None, chosen, api_name=False)
            chosen.change(on.show_prompt, chosen, [detail, statements, group], api_name="prompt")
            gr.Button("Filter", visible=False).click(on.explore, filters, [count, table, chosen], api_name="explore")
        with gr.Tab("Score an image", id="score"):
            with gr.Row():
                with gr.Column():
                    upload = image_upload(label="Image (PNG / JPEG)", sources=["upload", "clipboard"], height=320)
                    prompt_pick = gr.Dropdown(
                        prompt_choices,
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
            verdicts = gr.Dataframe(
                headers=VERDICT_COLUMNS, label="Objects and statements", interactive=False, wrap=True
            )
            if judging is not None:  # a VLM judge's answers beside the verdict (off by default)
                judge_outputs = judging.layout()
                score_button.click(judging.judge, [upload, prompt_pick, custom], judge_outputs, api_name="judge")
            result_file = gr.File(label="Result JSON")
            score_button.click(
                on.score, [upload, prompt_pick, custom], [annotated, verdict, verdicts, result_file], api_name="score"
            )
        with gr.Tab("Leaderboard", id="leaderboard"):
            gr.Markdown(
                f"Accuracy (%) of images passing every statement. {PAPER_ROWS_NOTE} `polarity_gap` = 0:1 − 1:0."
            )
            board = gr.Dataframe(
                headers=LEADERBOARD_HEADERS,
                interactive=False,
                show_search="filter",
                pinned_columns=1,
                label="Leaderboard",
                elem_id="leaderboard",
            )
            with gr.Row():
                refresh = gr.Button("Refresh")
                csv_file = gr.File(label="CSV")
            model_pick = gr.Dropdown([], label="Model detail")
            model_status = gr.Markdown()
            plot = gr.Plot(label="Positive vs negated statements per category")
            causes = gr.Dataframe(
                headers=CAUSE_COLUMNS,
                interactive=False,
                label="Failure causes by category (failed statements)",
            )
            gr.Markdown("Submissions awaiting verification are not ranked; they are retried automatically.")
            awaiting = gr.Dataframe(
                headers=AWAITING_COLUMNS, interactive=False, wrap=True, label="Awaiting verification (not ranked)"
            )
            board_outputs = [board, csv_file, model_pick, awaiting]
            refresh.click(on.leaderboard, None, board_outputs, api_name="leaderboard")
            model_pick.change(on.model_details, model_pick, [model_status, plot, causes], api_name="model_detail")
        with gr.Tab("Submit", id="submit"):
            gr.Markdown(
                submit_help(
                    version=EVALUATOR_VERSION,
                    config_hash=config.config_hash,
                    k=limits.spot_check_k,
                    max_megabytes=limits.max_bytes // 2**20,
                    per_day=limits.per_day,
                )
            )
            if require_login and os.environ.get("SPACE_ID"):
                # Off a Space gradio mocks the OAuth routes with the local HF token (and a whoami call).
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
            submissions = gr.Dataframe(headers=SUBMISSION_COLUMNS, label="Submissions", interactive=False, wrap=True)
            send.click(
                on.submit,
                [results_upload, model_name, link, images_repo, revision],
                [submit_status, submissions],
                api_name="submit",
            )
        with gr.Tab("Annotate", id="annotate"):
            annotate_tab(demo, annotating, login_button=bool(require_login and os.environ.get("SPACE_ID")))
        demo.load(on.explore, filters, [count, table, chosen], api_name=False).then(
            on.show_prompt, chosen, [detail, statements, group], api_name=False
        )
        demo.load(on.leaderboard, None, board_outputs, api_name=False)
        demo.load(on.submissions, None, submissions, api_name=False)
    if recheck_every is not None:
        demo.rechecker = Rechecker(on.recheck, recheck_every).start()
    return demo
