"""What the Score and Submit tabs share, and the app's temporary folder and background passes.

- `SharedState`: the store, the scorer, the upload cache, one scoring and one submitting event per
  client (`ClientSlots`), the uploads each client had refused as invalid in the last hour, and the
  verification jobs' pass (`recheck`). The Score tab's handlers (`space.tabs.score.score_handlers`)
  and the Submit tab's (`space.tabs.submit.submit_handlers`) are methods over it, and
  `space.app.Handlers` is the one object that has both; the Explore, Leaderboard, Gallery, Compare
  and Annotate tabs, which share none of this state, keep their handlers in their own folders.
- `WorkDir`: the app's temporary folder, removed when the app closes.
- `Rechecker`: a pass run at start-up and then every so often, in a daemon thread.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import EvaluatorConfig
from leaderboard.intake.submissions import ImageSourceFactory, RevisionResolver, SubmissionLimits
from leaderboard.jobs.job_keeper import JobKeeper
from leaderboard.store.sqlite_store import LeaderboardStore

from .gpu_calls import ScoreOnGpu
from .resources import CacheBudget, ClientSlots, RecentEvents

log = logging.getLogger(__name__)


class WorkDir:
    """The app's temporary folder (`negt2i_space_*`, for downloads): made on first use, removed by
    `cleanup()` (when the app closes) or at interpreter exit, whichever comes first."""

    def __init__(self, prefix: str = "negt2i_space_"):
        self.prefix = prefix
        self._path: Path | None = None
        self._finalizer: weakref.finalize | None = None

    @property
    def path(self) -> Path:
        if self._path is None or not self._path.is_dir():
            self._path = Path(tempfile.mkdtemp(prefix=self.prefix))
            self._finalizer = weakref.finalize(self, shutil.rmtree, str(self._path), True)
        return self._path

    def existing(self) -> list[Path]:
        """The folder when it has been made (what the cache sweep looks at), else nothing."""
        return [self._path] if self._path is not None and self._path.is_dir() else []

    def cleanup(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # removes the folder once; detached afterwards
        self._path, self._finalizer = None, None


class Rechecker:
    """Runs `run` once at start-up, then every `interval` seconds, in a daemon thread, until `stop()`
    (when the app closes); `wake()` runs it now. The verification jobs' pass (`JobKeeper.run_pass`)
    is one: what it does is in the store, where tests wait for it."""

    def __init__(self, run: Callable[[], object], interval: float, name: str = "negt2i-recheck"):
        self.run, self.interval = run, interval
        self._stop, self._wake = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)

    def start(self) -> Rechecker:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.run()
            except Exception:  # noqa: BLE001 - a failed pass is logged; the next one comes anyway
                log.exception("rechecking submissions failed")
            self._wake.wait(self.interval)
            self._wake.clear()

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()


@dataclass
class SharedState:
    """The state the Score and Submit tabs share (see the module's docstring): their handlers are
    methods of subclasses (`ScoreHandlers`, `SubmitHandlers`), and `space.app.Handlers` has both."""

    prompts: Sequence[PromptRecord]  # the corpus: its size sets the spot check's sample (Submit's help)
    index: PromptIndex
    store: LeaderboardStore
    score_on_gpu: ScoreOnGpu
    config: EvaluatorConfig
    open_images: ImageSourceFactory
    limits: SubmissionLimits
    require_login: bool
    work_dir: WorkDir
    jobs: JobKeeper | None = None  # the verification jobs (None: none launched from this app)
    resolve_revision: RevisionResolver | None = None  # a submitted revision → its commit (None: `default_resolver`)
    slots: ClientSlots = field(default_factory=ClientSlots)  # scoring events per client at once
    submit_slots: ClientSlots = field(default_factory=ClientSlots)  # submitting events per client at once
    invalid_uploads: RecentEvents = field(default_factory=RecentEvents)  # refused as invalid, per client, last hour
    cache: CacheBudget | None = None  # the upload cache, kept under its bound after each upload
    on_stored: Callable[[], None] | None = None  # a submission was stored: launch its verification job
    check_weights: Callable[[], None] | None = None  # raises when the scorer cannot run here (a look at the disk)
    stand_in: str = ""  # the name of a perception given in place of the models (a test double): verdicts say so
    # The last "weights missing" answer and when it came: clicks within the Score tab's WEIGHTS_RETRY_SECONDS
    # (`space.tabs.score.score_handlers`) reuse it.
    _missing_weights: tuple[float, str] | None = field(default=None, repr=False)

    def _tidy(self) -> None:
        """After an event that took an upload: the cache back under its bound."""
        if self.cache is not None:
            try:
                self.cache.enforce()
            except Exception:  # noqa: BLE001 - a failed sweep must not fail the answer; the next one retries
                log.exception("cache sweep failed")

    def recheck(self) -> list:
        """The verification jobs' pass (start-up, a stored submission, then periodically): launch,
        poll, relaunch, cancel (`leaderboard.jobs.job_keeper`). The Space never re-scores in its own process."""
        return self.jobs.run_pass() if self.jobs is not None else []
