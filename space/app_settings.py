"""The settings of the Space (`space.app.build_app`'s keyword arguments), one documented attribute each."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_builder.records import PromptRecord
from leaderboard.hub.hub_check import HUB_REFRESH_SECONDS
from leaderboard.intake.submissions import ImageSourceFactory, SubmissionLimits
from leaderboard.jobs.job_backends import VerifyBackend
from leaderboard.jobs.job_keeper import JobPolicy
from leaderboard.store.image_sources import RevisionResolver
from leaderboard.store.sqlite_store import LeaderboardStore
from negt2ibench.api import Evaluator

from .resources import CACHE_BYTES
from .tabs.leaderboard.leaderboard_tab import BOARD_REFRESH_SECONDS
from .tabs.score.score_views import ScoreExample

# How often the verification jobs' pass runs while the app runs (launch, poll, relaunch, cancel; a
# stored submission wakes it at once). Cheap: a store read, and one state call per running job.
RECHECK_SECONDS = 60


@dataclass(frozen=True)
class AppSettings:
    """The settings of `build_app`: one attribute per keyword argument, of the same name and default.

    Attributes:
        prompts: the prompt records; else read from the built `dataset` folder; else the corpus
            built in memory.
        dataset: the built dataset folder (`negt2ibench build`) the prompts come from, also handed to
            the local verification jobs; it names the benchmark's Hub repo after a push (`hub_dataset`).
        store: the leaderboard store; else `open_store()` (SQLite under NEGT2I_HOME or the Hub repo).
        evaluator: the models that score uploads; else an `Evaluator(PRESET)` whose models load on
            the first score. Submissions are never re-scored here: a verification job does (`verify_backend`).
        perception: the models' stand-in (e.g. a test double) the default evaluator is built around
            instead of the real models; not with `evaluator`.
        open_images: where submitted images are read (default: `images_from`'s folder, else
            `hub_images`: a Hub dataset repo at the commit its revision named when the submission was
            stored).
        resolve_revision: pins the commit `open_images` reads (default: `hub_commit` for `hub_images`; a
            local source's own `resolve_revision`, else the revision as typed, `keep_revision`).
        images_from: a folder DIR holding submissions' images as DIR/ORG/NAME (laid out as the Hub
            repo), read instead of the Hub, here and by the local verification jobs (`serve --images-from`).
        limits: the bounds on a submission and on each submitter (default `SubmissionLimits()`).
        preload: load the models now (default: when running on ZeroGPU, where it must happen in
            the main process at start-up). On a Hugging Face Space (SPACE_ID set) the weights that
            are missing are downloaded first and the models loaded, whatever `preload` says.
        require_login: show "Sign in with Hugging Face" and refuse anonymous submissions, so the
            per-user limits key on a real account (default: when running on a Hugging Face Space).
            Annotators sign in the same way.
        annotation_sample: the Annotate tab's sample.jsonl (or its `SampleItem`s); default env
            NEGT2I_ANNOTATION_SAMPLE.
        annotation_images: where the sample's images are (env NEGT2I_ANNOTATION_IMAGES).
        judge: a VLM judge (adapter or registered key; default env NEGT2I_JUDGE) whose answers the
            Score tab shows beside the verdict.
        judge_mode: the judge's questions: pos, neg or whole (env NEGT2I_JUDGE_MODE).
        weights_dir: the folder `negt2ibench download-models --dir DIR` filled (`serve --weights-dir`).
        recheck_every: run the verification jobs' pass (`leaderboard.jobs.job_keeper`: launch, poll,
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
        verify_backend: where verification jobs run (`leaderboard.jobs.job_backends`); default
            `default_backend`: NEGT2I_VERIFY_BACKEND, else hf-jobs on ZeroGPU with a token, none on
            ZeroGPU without one, local elsewhere (a subprocess with this app's weights and dataset).
        job_policy: the jobs' bounds (failures, daily budget, retry wait, timeout; `JobPolicy`).
    """

    prompts: Sequence[PromptRecord] | None = None
    dataset: str | Path | None = None
    store: LeaderboardStore | None = None
    evaluator: Evaluator | None = None
    perception: Any = None
    open_images: ImageSourceFactory | None = None
    resolve_revision: RevisionResolver | None = None
    images_from: str | Path | None = None
    limits: SubmissionLimits | None = None
    preload: bool | None = None
    require_login: bool | None = None
    annotation_sample: str | Path | Sequence[Any] | None = None
    annotation_images: str | None = None
    judge: Any = None
    judge_mode: str | None = None
    weights_dir: str | Path | None = None
    recheck_every: float | None = RECHECK_SECONDS
    forwarded_allow_ips: str | None = None
    cache_bytes: int = CACHE_BYTES
    verify_secret: bytes | None = None
    hub_dataset: str | None = None
    space_url: str | None = None
    hub_api: Any = None
    hub_refresh_every: float = HUB_REFRESH_SECONDS
    board_refresh_every: float = BOARD_REFRESH_SECONDS
    demo_note: str | None = None
    score_example: ScoreExample | None = None
    verify_backend: VerifyBackend | None = None
    job_policy: JobPolicy | None = None
