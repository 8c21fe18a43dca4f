"""The NegT2IBench Space: explore the prompts, score an upload, the leaderboard, a verified model's
images (gallery, compare), submissions, annotation.

`build_app()` makes the shared state and handlers and calls each tab's module (`space.tabs`:
`explore`, `score`, `leaderboard`, `gallery`, `compare`, `submit`, `annotate`), which lays its tab out and wires its
events to small handlers that call pure view builders (`views`, `leaderboard_view`). The models
are an `Evaluator` passed in (or built here, lazily); the scoring function runs under
`spaces.GPU` (`scoring`: a no-op off ZeroGPU) and only CPU objects cross it. The app's temporary folder is removed when
it closes, at exit, or on SIGTERM (a Space's restart). Identities (`identity`), names (`names`),
the spot check's policy (`verification`) and the bounds on disk, queue and image sizes
(`resources`) have their own modules.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gradio as gr
import matplotlib.pyplot  # noqa: F401  (see below)

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex, PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION
from leaderboard.hub_check import HUB_REFRESH_SECONDS, HubLeaderboard, default_api
from leaderboard.hub_results import hub_dataset_id, space_base_url
from leaderboard.identity import FORWARDED_ENV, check_forwarded_allow_ips, default_forwarded_allow_ips
from leaderboard.images import RevisionResolver, default_resolver
from leaderboard.job_backends import LocalBackend, VerifyBackend, default_backend
from leaderboard.job_keeper import JobKeeper, JobPolicy
from leaderboard.rescore import local_images
from leaderboard.spotcheck import SECRET_ENV
from leaderboard.store import LeaderboardStore, negt2i_home, open_store
from leaderboard.submissions import PRESET, ImageSourceFactory, SubmissionLimits, hub_images
from negt2ibench.api import Evaluator
from negt2ibench.core.errors import UsageError

from .gallery.entries import verified_images
from .handlers import Handlers, Rechecker, WorkDir
from .judge_panel import judge_panel
from .resources import CACHE_BYTES, DELETE_CACHE, QUEUE_SIZE, SWEEP_SECONDS, blocks_cache
from .scoring import gpu_scorer, on_zero_gpu, preload_models
from .tabs import annotate, compare, explore, gallery, leaderboard, score, submit
from .tabs.annotate import annotation_handlers
from .tabs.compare import CompareHandlers
from .tabs.explore import ExploreHandlers
from .tabs.gallery import GalleryHandlers
from .tabs.leaderboard import BOARD_REFRESH_SECONDS, LeaderboardHandlers
from .tabs.score import ScoreExample
from .views import prompt_label

# gradio switches matplotlib's backend around every event, importing pyplot on first use; two
# first events at once then race on a half-imported module ("partially initialized module
# 'matplotlib.pyplot'"). Importing it above, before any event runs, removes the race.

# How often the verification jobs' pass runs while the app runs (launch, poll, relaunch, cancel; a
# stored submission wakes it at once). Cheap: a store read, and one state call per running job.
RECHECK_SECONDS = 60
SESSIONS_KEPT = 100  # sessions whose state the server keeps (LRU): at most about 50 MB
# theme/css go to launch() in gradio 6; uploads above the size limit are refused before any handler runs.
LAUNCH_KWARGS: dict[str, Any] = {
    "theme": gr.themes.Soft(),
    "css": ".verdict-pass{color:#15803d}.verdict-fail,.verdict-error{color:#b91c1c}",
    "max_file_size": f"{SubmissionLimits().max_bytes // 2**20}mb",
    # Each browser or API session keeps a copy of every component's configuration (about 0.5 MB here:
    # the prompt pickers' choices); gradio keeps 10,000 by default. The newest SESSIONS_KEPT only.
    "state_session_capacity": SESSIONS_KEPT,
}


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
    """The Space.

    Args:
        prompts: the prompt records; else read from the built `dataset` folder; else the corpus
            built in memory.
        store: the leaderboard store; else `open_store()` (SQLite under NEGT2I_HOME or the Hub repo).
        images_from: a folder DIR holding submissions' images as DIR/ORG/NAME (laid out as the Hub
            repo), read instead of the Hub, here and by the local verification jobs (`serve --images-from`).
        evaluator: the models that score uploads; else an `Evaluator(PRESET)` whose models load on
            the first score. `perception` (e.g. a test double) builds that evaluator around it
            instead. Submissions are never re-scored here: a verification job does (`verify_backend`).
        open_images: where submitted images are read (default: `images_from`'s folder, else
            `hub_images`: a Hub dataset repo at the commit its revision named when the submission was
            stored). `resolve_revision` pins that commit (default: `hub_commit` for `hub_images`; a
            local source's own `resolve_revision`, else the revision as typed, `keep_revision`).
        preload: load the models now (default: when running on ZeroGPU, where it must happen in
            the main process at start-up). On a Hugging Face Space (SPACE_ID set) the weights that
            are missing are downloaded first and the models loaded, whatever `preload` says.
        require_login: show "Sign in with Hugging Face" and refuse anonymous submissions, so the
            per-user limits key on a real account (default: when running on a Hugging Face Space).
            Annotators sign in the same way.
        annotation_sample: the Annotate tab's sample.jsonl (or its `SampleItem`s); default env
            NEGT2I_ANNOTATION_SAMPLE; `annotation_images` (env NEGT2I_ANNOTATION_IMAGES) where its images are.
        judge: a VLM judge (adapter or registered key; default env NEGT2I_JUDGE) whose answers the
            Score tab shows beside the verdict, in `judge_mode` (pos, neg or whole; env NEGT2I_JUDGE_MODE).
        weights_dir: the folder `negt2ibench download-models --dir DIR` filled (`serve --weights-dir`).
        recheck_every: run the verification jobs' pass (`leaderboard.job_keeper`: launch, poll,
            relaunch, cancel) at start-up and then every so many seconds, in a background thread
            (None: never); a stored submission wakes it at once.
        forwarded_allow_ips: the proxies whose X-Forwarded-For is believed (uvicorn's convention:
            addresses or networks, comma-separated); default `identity.default_forwarded_allow_ips()`
            (FORWARDED_ALLOW_IPS, else the Spaces proxy's network on a Space, else none).
        cache_bytes: the bound on the app's files on disk (uploads, outputs, its temporary folder).
        verify_secret: the spot check's sample secret, given to the jobs this app launches (default:
            NEGT2I_VERIFY_SECRET, else each job draws its own).
        hub_dataset: the benchmark's Hub dataset repo (default NEGT2I_HUB_DATASET, else the repo the
            dataset folder's card names after a push; "": none): verified entries get `.eval_results` YAML
            naming it, and the board a `hub` column from its Hub leaderboard (docs/hub.md).
        space_url: the Space's public address, the base of an entry's page (default
            NEGT2I_SPACE_URL, else the Space's Hub page on a Space, else the request's address).
        hub_api: a factory of the `HfApi` that reads the Hub's leaderboard (default `HfApi()`; a test double).
        hub_refresh_every: seconds between readings of the Hub's leaderboard (one at start-up).
        board_refresh_every: seconds between readings of the leaderboard while a submission awaits
            verification (the page reads it again without a reload).
        demo_note: a note shown under the title on every page (`negt2ibench serve --demo`: what is synthetic).
        score_example: what the Score tab shows before anything is scored (the demo's example).
        verify_backend: where verification jobs run (`leaderboard.job_backends`); default
            `default_backend`: NEGT2I_VERIFY_BACKEND, else hf-jobs on ZeroGPU with a token, none on
            ZeroGPU without one, local elsewhere (a subprocess with this app's weights and dataset).
        job_policy: the jobs' bounds (failures, daily budget, retry wait, timeout; `JobPolicy`).
    """
    if evaluator is not None and perception is not None:
        raise UsageError("pass evaluator or perception to build_app, not both")
    limits = limits or SubmissionLimits()
    forwarded = check_forwarded_allow_ips(
        default_forwarded_allow_ips() if forwarded_allow_ips is None else forwarded_allow_ips
    )
    if require_login is None:
        require_login = bool(os.environ.get("SPACE_ID"))
    prompts = list(prompts if prompts is not None else load_prompts(dataset))
    index = PromptIndex(prompts)
    if open_images is None:
        open_images = local_images(Path(images_from)) if images_from is not None else hub_images
    store = store if store is not None else open_store()
    if evaluator is None:
        models = {"perception": perception} if perception is not None else {"weights_dir": weights_dir}
        evaluator = Evaluator(PRESET, prompts=index, **models)
    on_hub_space = bool(os.environ.get("SPACE_ID")) and perception is None
    if on_hub_space or (preload if preload is not None else on_zero_gpu()):
        preload_models(evaluator, fetch=on_hub_space)  # a Space starts without the weights: fetched once
    config = evaluator.config
    work_dir = WorkDir()
    benchmark = None if hub_dataset == "" else hub_dataset_id(hub_dataset, dataset)
    hub_board = HubLeaderboard(benchmark, hub_api or default_api) if benchmark else None
    if verify_backend is None:
        verify_backend = _default_verify_backend(store, dataset, weights_dir, verify_secret, images_from)
    jobs = JobKeeper(
        store,
        verify_backend,
        limits=limits,
        images_per_entry=len(prompts) * SAMPLES_PER_PROMPT,
        policy=job_policy,
        open_images=open_images,  # the model an entry's images record: its jobs' plans
    )
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
        check_weights=evaluator.require_weights,
        stand_in=type(perception).__name__ if perception is not None else "",
        jobs=jobs,
        resolve_revision=resolve_revision or default_resolver(open_images),
    )
    prompt_choices = [(prompt_label(p), p.prompt_id) for p in prompts]
    annotating = annotation_handlers(
        store=store, prompts=index, sample=annotation_sample, images=annotation_images, require_login=require_login
    )
    judging = judge_panel(judge, judge_mode, on.prompt_of, preload=preload)
    looking = verified_images(store=store, prompts=index, open_images=open_images, work_dir=work_dir)
    # Off a Space gradio mocks the OAuth routes with the local HF token (and a whoami call): no button there.
    login_button = bool(require_login and os.environ.get("SPACE_ID"))

    with SpaceBlocks(work_dir, forwarded, title="NegT2IBench", delete_cache=DELETE_CACHE) as demo:
        demo.verify_backend = verify_backend
        gr.Markdown(
            "# NegT2IBench\nDo text-to-image models respect *negation*? 4,800 prompts in 6 categories × 8 "
            "positive:negated settings, scored by a detector-based evaluator "
            f"(version {EVALUATOR_VERSION}, config `{config.config_hash}`)."
        )
        if demo_note:
            gr.Markdown(demo_note, elem_id="demo-note")
        explore.build(demo, ExploreHandlers(prompts, index), prompt_choices)
        score.build(on, prompt_choices, judging, score_example)
        board = LeaderboardHandlers(store, work_dir, hub_board, benchmark, space_base_url(space_url))
        refreshed = leaderboard.build(demo, board, board_refresh_every)
        gallery.build(GalleryHandlers(looking))
        compare.build(CompareHandlers(looking, prompts), prompt_choices)
        refreshed.after(submit.build(demo, on, login_button=login_button))  # a stored submission shows at once
        annotate.build(demo, annotating, login_button=login_button)
    demo.queue(max_size=QUEUE_SIZE)
    on.cache = blocks_cache(demo, cache_bytes, work_dir.existing)
    looking.images.after_write = on.cache.enforce  # the bound holds after each Gallery page's writes
    demo.sweeper = Rechecker(on.cache.enforce, SWEEP_SECONDS, name="negt2i-cache").start()
    if hub_board is not None:  # read at start-up, then hourly; the board shows the last reading
        demo.hub_reader = Rechecker(hub_board.refresh, hub_refresh_every, name="negt2i-hub").start()
    if recheck_every is not None:
        demo.rechecker = Rechecker(on.recheck, recheck_every).start()
        on.on_stored = demo.rechecker.wake
    return demo


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
