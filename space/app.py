"""The NegT2IBench Space: explore the prompts, score an upload, the leaderboard, a verified model's
images (gallery, compare), submissions, annotation.

`build_app()` resolves its settings (`app_settings.AppSettings`), makes the shared state and handlers
(`Handlers`: the Score and Submit tabs' over `shared_state.SharedState`) and calls each tab's
`build` (`space.tabs`: `explore`, `score`, `leaderboard`, `gallery`, `compare`, `submit`,
`annotate`, one folder each), which lays its tab out and wires its events to small handlers that
call pure view builders (each tab's `<tab>_views`, and the shared `prompt_views`, `verdict_views`).
The models are an `Evaluator` passed in (or built here, lazily); the scoring function runs under
`spaces.GPU` (`gpu_calls`: a no-op off ZeroGPU) and only CPU objects cross it. The app's temporary
folder is removed when it closes, at exit, or on SIGTERM (a Space's restart). Identities
(`leaderboard.intake.identity`), names (`leaderboard.text.submitted_names`), the spot check's policy
(`leaderboard.checks.spot_check_policy`) and the bounds on disk, queue and image sizes
(`resources`) have their own modules.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gradio as gr
import matplotlib.pyplot  # noqa: F401  (see below)

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex, PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION
from leaderboard.checks.check_setup import SECRET_ENV
from leaderboard.checks.full_rescore_run import local_images
from leaderboard.hub.entry_eval_results import hub_dataset_id, space_base_url
from leaderboard.hub.hub_check import HUB_REFRESH_SECONDS, HubLeaderboard, default_api
from leaderboard.intake.identity import FORWARDED_ENV, check_forwarded_allow_ips, default_forwarded_allow_ips
from leaderboard.intake.submissions import PRESET, ImageSourceFactory, SubmissionLimits, hub_images
from leaderboard.jobs.job_backends import LocalBackend, VerifyBackend, default_backend
from leaderboard.jobs.job_keeper import JobKeeper, JobPolicy
from leaderboard.store.image_sources import RevisionResolver, default_resolver
from leaderboard.store.sqlite_store import LeaderboardStore, negt2i_home, open_store
from negt2ibench.api import Evaluator
from negt2ibench.core.errors import UsageError

from .app_settings import RECHECK_SECONDS, AppSettings
from .gpu_calls import gpu_scorer, on_zero_gpu, preload_models
from .prompt_views import prompt_label
from .resources import CACHE_BYTES, DELETE_CACHE, QUEUE_SIZE, SWEEP_SECONDS, blocks_cache
from .shared_state import Rechecker, WorkDir
from .tabs.annotate import annotate_tab
from .tabs.annotate.annotate_tab import annotation_handlers
from .tabs.compare import compare_tab
from .tabs.compare.compare_tab import CompareHandlers
from .tabs.explore import explore_tab
from .tabs.explore.explore_tab import ExploreHandlers
from .tabs.gallery import gallery_tab
from .tabs.gallery.gallery_tab import GalleryHandlers
from .tabs.leaderboard import leaderboard_tab
from .tabs.leaderboard.leaderboard_handlers import LeaderboardHandlers
from .tabs.leaderboard.leaderboard_tab import BOARD_REFRESH_SECONDS
from .tabs.score import score_tab
from .tabs.score.judge_panel import judge_panel
from .tabs.score.score_handlers import ScoreHandlers
from .tabs.score.score_views import ScoreExample
from .tabs.submit import submit_tab
from .tabs.submit.submit_handlers import SubmitHandlers
from .verified_images.verified_entries import VerifiedImages, verified_images

# gradio switches matplotlib's backend around every event, importing pyplot on first use; two
# first events at once then race on a half-imported module ("partially initialized module
# 'matplotlib.pyplot'"). Importing it above, before any event runs, removes the race.

SESSIONS_KEPT = 100  # sessions whose state the server keeps (LRU): at most about 50 MB
# theme/css go to launch() in gradio 6; uploads above the size limit are refused before any handler runs.
LAUNCH_KWARGS: dict[str, Any] = {
    "theme": gr.themes.Soft(),
    "css": (Path(__file__).with_name("app.css")).read_text(encoding="utf-8"),  # tables, captions, verdicts
    "max_file_size": f"{SubmissionLimits().max_bytes // 2**20}mb",
    # Each browser or API session keeps a copy of every component's configuration (about 0.5 MB here:
    # the prompt pickers' choices); gradio keeps 10,000 by default. The newest SESSIONS_KEPT only.
    "state_session_capacity": SESSIONS_KEPT,
}


class Handlers(ScoreHandlers, SubmitHandlers):
    """The handlers of the Score tab (`ScoreHandlers`) and the Submit tab (`SubmitHandlers`) over the
    state they share (`space.shared_state.SharedState`, whose fields it takes by keyword): the one
    object `build_app` makes of them and hands to both tabs."""


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt  # gradio's main-thread wait stops the server on it, as on Ctrl-C


class SpaceBlocks(gr.Blocks):
    """The app's Blocks: launched behind the configured proxies only, and closing it (or SIGTERM)
    also removes its temporary folder and stops its background threads."""

    def __init__(self, work_dir: WorkDir, forwarded_allow_ips: str = "", **kwargs: Any):
        super().__init__(**kwargs)
        self.work_dir = work_dir
        self.forwarded_allow_ips = forwarded_allow_ips
        self.rechecker: Rechecker | None = None
        self.sweeper: Rechecker | None = None
        self.hub_reader: Rechecker | None = None
        self.verify_backend: VerifyBackend | None = None

    def launch(self, *args: Any, **kwargs: Any):
        """`gr.Blocks.launch`, with uvicorn trusting X-Forwarded-For from `forwarded_allow_ips` only
        (uvicorn reads FORWARDED_ALLOW_IPS when the server is made), and SIGTERM handled as Ctrl-C."""
        blocking = not kwargs.get("prevent_thread_lock", False)
        if blocking and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _interrupt)
        previous = os.environ.get(FORWARDED_ENV)
        os.environ[FORWARDED_ENV] = self.forwarded_allow_ips
        try:
            return super().launch(*args, **kwargs)
        finally:
            if previous is None:
                os.environ.pop(FORWARDED_ENV, None)
            else:
                os.environ[FORWARDED_ENV] = previous
            if blocking:  # the server has stopped (Ctrl-C, SIGTERM): the folder goes now, not at exit
                self.close()

    def close(self, verbose: bool = True) -> None:
        try:
            super().close(verbose)
        finally:
            for thread in (self.rechecker, self.sweeper, self.hub_reader):
                if thread is not None:
                    thread.stop()
            if isinstance(self.verify_backend, LocalBackend):
                self.verify_backend.close()  # its subprocesses end with the app (the next start relaunches)
            self.work_dir.cleanup()


def build_app(
    *,
    prompts: Sequence[PromptRecord] | None = None,
    dataset: str | Path | None = None,
    store: LeaderboardStore | None = None,
    evaluator: Evaluator | None = None,
    perception: Any = None,
    open_images: ImageSourceFactory | None = None,
    resolve_revision: RevisionResolver | None = None,
    images_from: str | Path | None = None,
    limits: SubmissionLimits | None = None,
    preload: bool | None = None,
    require_login: bool | None = None,
    annotation_sample: str | Path | Sequence[Any] | None = None,
    annotation_images: str | None = None,
    judge: Any = None,
    judge_mode: str | None = None,
    weights_dir: str | Path | None = None,
    recheck_every: float | None = RECHECK_SECONDS,
    forwarded_allow_ips: str | None = None,
    cache_bytes: int = CACHE_BYTES,
    verify_secret: bytes | None = None,
    hub_dataset: str | None = None,
    space_url: str | None = None,
    hub_api: Any = None,
    hub_refresh_every: float = HUB_REFRESH_SECONDS,
    board_refresh_every: float = BOARD_REFRESH_SECONDS,
    demo_note: str | None = None,
    score_example: ScoreExample | None = None,
    verify_backend: VerifyBackend | None = None,
    job_policy: JobPolicy | None = None,
) -> gr.Blocks:
    """The Space: its state and handlers resolved from the settings, its tabs laid out, its background
    threads (the verification jobs' pass, the cache sweep, the Hub's leaderboard) started.

    Args:
        prompts, dataset, store, images_from, open_images, resolve_revision: the prompts, the leaderboard
            store and where submitted images are read.
        evaluator, perception, preload, weights_dir: the models that score uploads, and when they load.
        limits, require_login, forwarded_allow_ips, cache_bytes: the bounds on submitters and on disk.
        annotation_sample, annotation_images, judge, judge_mode: the Annotate tab; the Score tab's judge.
        verify_backend, job_policy, verify_secret, recheck_every: the verification jobs.
        hub_dataset, space_url, hub_api, hub_refresh_every, board_refresh_every: the Hub and the board.
        demo_note, score_example: what the demo shows. Each is the `AppSettings` attribute of its name.

    Returns:
        The app (a `SpaceBlocks`, queued, not launched); closing it removes its temporary folder.

    Raises:
        UsageError: both `evaluator` and `perception` were given.
        ValueError: `forwarded_allow_ips` names something other than addresses or networks.
        NoPromptsError: no prompts at `dataset` (`PromptFileError`: a malformed prompts file).
    """
    settings = AppSettings(**locals())  # the first statement: locals() holds exactly the arguments
    parts = _resolve_parts(settings)
    on = _handlers(settings, parts)
    demo, looking = _lay_out_tabs(settings, parts, on)
    _start_background_work(demo, settings, on, parts.hub_board, looking)
    return demo


@dataclass
class _AppParts:
    """What `build_app` resolves from its settings before it lays out the tabs."""

    prompts: list[PromptRecord]
    index: PromptIndex
    store: LeaderboardStore
    evaluator: Evaluator
    open_images: ImageSourceFactory
    limits: SubmissionLimits
    forwarded: str
    require_login: bool
    work_dir: WorkDir
    benchmark: str | None
    hub_board: HubLeaderboard | None
    verify_backend: VerifyBackend


def _resolve_parts(s: AppSettings) -> _AppParts:
    """The settings' defaults, in order: the checks, the prompts, the images' source, the store, the
    evaluator (loaded now when preloading), the temporary folder, the Hub's board, the jobs' backend."""
    if s.evaluator is not None and s.perception is not None:
        raise UsageError("pass evaluator or perception to build_app, not both")
    limits = s.limits or SubmissionLimits()
    forwarded = check_forwarded_allow_ips(
        default_forwarded_allow_ips() if s.forwarded_allow_ips is None else s.forwarded_allow_ips
    )
    require_login = bool(os.environ.get("SPACE_ID")) if s.require_login is None else s.require_login
    prompts = list(s.prompts if s.prompts is not None else load_prompts(s.dataset))
    index = PromptIndex(prompts)
    open_images = s.open_images
    if open_images is None:
        open_images = local_images(Path(s.images_from)) if s.images_from is not None else hub_images
    store = s.store if s.store is not None else open_store()
    evaluator = _evaluator(s, index)
    work_dir = WorkDir()
    benchmark = None if s.hub_dataset == "" else hub_dataset_id(s.hub_dataset, s.dataset)
    hub_board = HubLeaderboard(benchmark, s.hub_api or default_api) if benchmark else None
    verify_backend = s.verify_backend
    if verify_backend is None:
        verify_backend = _default_verify_backend(store, s.dataset, s.weights_dir, s.verify_secret, s.images_from)
    return _AppParts(
        prompts=prompts,
        index=index,
        store=store,
        evaluator=evaluator,
        open_images=open_images,
        limits=limits,
        forwarded=forwarded,
        require_login=require_login,
        work_dir=work_dir,
        benchmark=benchmark,
        hub_board=hub_board,
        verify_backend=verify_backend,
    )


def _evaluator(s: AppSettings, index: PromptIndex) -> Evaluator:
    """The given evaluator, else one of the preset (around `perception`, else this machine's models);
    its models loaded now on a Hugging Face Space (fetched first) or when preloading."""
    evaluator = s.evaluator
    if evaluator is None:
        models = {"perception": s.perception} if s.perception is not None else {"weights_dir": s.weights_dir}
        evaluator = Evaluator(PRESET, prompts=index, **models)
    on_hub_space = bool(os.environ.get("SPACE_ID")) and s.perception is None
    if on_hub_space or (s.preload if s.preload is not None else on_zero_gpu()):
        preload_models(evaluator, fetch=on_hub_space)  # a Space starts without the weights: fetched once
    return evaluator


def _handlers(s: AppSettings, parts: _AppParts) -> Handlers:
    """The handlers the Score and Submit tabs share, over the jobs' keeper."""
    jobs = JobKeeper(
        parts.store,
        parts.verify_backend,
        limits=parts.limits,
        images_per_entry=len(parts.prompts) * SAMPLES_PER_PROMPT,
        policy=s.job_policy,
        open_images=parts.open_images,  # the model an entry's images record: its jobs' plans
    )
    return Handlers(
        prompts=parts.prompts,
        index=parts.index,
        store=parts.store,
        score_on_gpu=gpu_scorer(parts.evaluator),
        config=parts.evaluator.config,
        open_images=parts.open_images,
        limits=parts.limits,
        require_login=parts.require_login,
        work_dir=parts.work_dir,
        check_weights=parts.evaluator.require_weights,
        stand_in=type(s.perception).__name__ if s.perception is not None else "",
        jobs=jobs,
        resolve_revision=s.resolve_revision or default_resolver(parts.open_images),
    )


def _lay_out_tabs(s: AppSettings, parts: _AppParts, on: Handlers) -> tuple[SpaceBlocks, VerifiedImages]:
    """The Blocks with the title and every tab, in tab order; and the verified images the Gallery and Compare read."""
    prompts, index, store, work_dir = parts.prompts, parts.index, parts.store, parts.work_dir
    prompt_choices = [(prompt_label(p), p.prompt_id) for p in prompts]
    annotating = annotation_handlers(
        store=store,
        prompts=index,
        sample=s.annotation_sample,
        images=s.annotation_images,
        require_login=parts.require_login,
    )
    judging = judge_panel(s.judge, s.judge_mode, on.prompt_of, preload=s.preload)
    looking = verified_images(store=store, prompts=index, open_images=parts.open_images, work_dir=work_dir)
    # Off a Space gradio mocks the OAuth routes with the local HF token (and a whoami call): no button there.
    login_button = bool(parts.require_login and os.environ.get("SPACE_ID"))

    with SpaceBlocks(work_dir, parts.forwarded, title="NegT2IBench", delete_cache=DELETE_CACHE) as demo:
        demo.verify_backend = parts.verify_backend
        gr.Markdown(
            "# NegT2IBench\nDo text-to-image models respect *negation*? 4,800 prompts in 6 categories × 8 "
            "positive:negated settings, scored by a detector-based evaluator "
            f"(version {EVALUATOR_VERSION}, config `{parts.evaluator.config.config_hash}`)."
        )
        if s.demo_note:
            gr.Markdown(s.demo_note, elem_id="demo-note")
        with gr.Tabs(selected="leaderboard", elem_id="tabs"):  # a visitor comes for the ranking: it opens first
            board = LeaderboardHandlers(store, work_dir, parts.hub_board, parts.benchmark, space_base_url(s.space_url))
            refreshed = leaderboard_tab.build(demo, board, s.board_refresh_every)
            explore_tab.build(demo, ExploreHandlers(prompts, index), prompt_choices)
            score_tab.build(on, prompt_choices, judging, s.score_example)
            gallery_tab.build(GalleryHandlers(looking))
            compare_tab.build(CompareHandlers(looking, prompts), prompt_choices)
            refreshed.after(submit_tab.build(demo, on, login_button=login_button))  # a stored submission shows at once
            annotate_tab.build(demo, annotating, login_button=login_button)
    return demo, looking


def _start_background_work(
    demo: SpaceBlocks,
    s: AppSettings,
    on: Handlers,
    hub_board: HubLeaderboard | None,
    looking: VerifiedImages,
) -> None:
    """The queue, the bound on the app's files, and the threads: the cache sweep, the Hub's board
    readings, the verification jobs' pass (woken by a stored submission)."""
    demo.queue(max_size=QUEUE_SIZE)
    on.cache = blocks_cache(demo, s.cache_bytes, demo.work_dir.existing)
    looking.images.after_write = on.cache.after_write  # the bound, told what each fetch kept
    demo.sweeper = Rechecker(on.cache.enforce, SWEEP_SECONDS, name="negt2i-cache").start()
    if hub_board is not None:  # read at start-up, then hourly; the board shows the last reading
        demo.hub_reader = Rechecker(hub_board.refresh, s.hub_refresh_every, name="negt2i-hub").start()
    if s.recheck_every is not None:
        demo.rechecker = Rechecker(on.recheck, s.recheck_every).start()
        on.on_stored = demo.rechecker.wake


def _default_verify_backend(
    store: LeaderboardStore,
    dataset: str | Path | None,
    weights_dir: str | Path | None,
    secret: bytes | None,
    images_from: str | Path | None = None,
) -> VerifyBackend:
    """`default_backend` for this app: a local job gets the app's dataset and weights folder, and the
    spot check's secret when the app was given one."""
    extra: list[str] = []
    if dataset is not None:
        extra += ["--dataset", str(Path(dataset).resolve())]
    if weights_dir is not None:
        extra += ["--weights-dir", str(Path(weights_dir).resolve())]
    if images_from is not None:
        extra += ["--images-from", str(Path(images_from).resolve())]
    backend = default_backend(store.locator(), on_zero_gpu=on_zero_gpu(), home=negt2i_home(), local_extra=extra)
    if secret is not None and isinstance(backend, LocalBackend):
        backend.env[SECRET_ENV] = secret.decode("utf-8", "surrogateescape")
    return backend
