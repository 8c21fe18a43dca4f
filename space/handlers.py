"""The handlers of the Score and Submit tabs and the state they share (the store, the scorer, the
upload cache, one scoring and one submitting event per client, the uploads each client had refused
as invalid in the last hour), the app's temporary folder and its background passes.

Each handler reads the inputs, calls the store, the scorer or the pure views (`views`), and turns
bad input into a status message, never a stack trace (`error_reply`: the message shown keeps its
last clause, and the whole of it goes to the log). The tabs (`space.tabs`)
wire them to their components; the Explore and Leaderboard tabs, which share none of this state,
keep their handlers beside their layout."""

from __future__ import annotations

import html
import logging
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import gradio as gr

from dataset_builder.grammar import PromptParseError
from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import EvaluatorConfig
from leaderboard.intake.identity import requester
from leaderboard.intake.submissions import (
    NOT_COUNTED,
    ImageSourceFactory,
    InvalidFileError,
    RevisionResolver,
    SubmissionError,
    SubmissionForm,
    SubmissionLimits,
    SubmissionStoredError,
    submit,
)
from leaderboard.jobs.job_keeper import JobKeeper
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.text.submitted_names import QUOTE_LIMIT, shorten
from negt2ibench.api import resolve_prompt
from negt2ibench.core.errors import MissingWeightsError, UserError

from . import views
from .gpu_calls import ScoreOnGpu, zero_gpu_refusal
from .resources import CacheBudget, ClientSlots, RecentEvents, bounded_image

WEIGHTS_RETRY_SECONDS = 300.0  # after "weights missing", clicks answer at once for this long, then retry
MAX_PROMPT_CHARS = 400  # a typed prompt, at most (the benchmark's longest is under 250)

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


def error_reply(message: str) -> str:
    """A failed event's answer: a toast with its first line, and the message as the status Markdown
    (each cut to a length that keeps its last clause); the whole message goes to the log."""
    log.warning("answered with an error: %s", message)  # the whole text, whatever the reply shows of it
    first = message.splitlines()[0] if message else "error"
    gr.Warning(html.escape(shorten(first, QUOTE_LIMIT + 100)))  # the toast renders HTML
    return views.error_markdown(message)


@dataclass
class Handlers:
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
    # The last "weights missing" answer and when it came: clicks within WEIGHTS_RETRY_SECONDS reuse it.
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

    # -- Score an image
    def prompt_of(self, prompt_id: str | None, custom_prompt: str | None) -> PromptRecord:
        """The typed prompt, else the picked one, by the API's rule (`negt2ibench.api.resolve_prompt`)."""
        if custom_prompt and custom_prompt.strip():
            if len(custom_prompt) > MAX_PROMPT_CHARS:
                raise UserError(
                    f"the prompt is {len(custom_prompt):,} characters long; prompts in the grammar are at most "
                    f"{MAX_PROMPT_CHARS}"
                )
            return resolve_prompt(custom_prompt, self.index)
        if not prompt_id:
            raise UserError("pick a benchmark prompt or type a prompt in the grammar")
        return resolve_prompt(prompt_id.split(":", 1)[0], self.index)  # a typed "id: text" label works too

    def score(
        self,
        upload: str | None,
        prompt_id: str | None,
        custom_prompt: str | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ):
        """Score an upload: one at a time per client (`ClientSlots`); the cache tidied afterwards."""
        with self.slots.hold(requester(request, profile)) as held:
            try:
                if not held:
                    message = "you already have an image being scored here; wait for it, then score the next"
                    return None, error_reply(message), views.verdict_frame(None, None), None
                return self._score(upload, prompt_id, custom_prompt)
            finally:
                self._tidy()

    def scorer_notice(self) -> str:
        """What the Score tab says before anything is scored: that a stand-in scores here, or that
        the scorer cannot run (its weights or libraries missing: a look at the disk, no load), and
        how to fix it; "" when the models are here."""
        if self.stand_in:
            return views.stand_in_note(self.stand_in)
        if self.check_weights is None:
            return ""
        try:
            self.check_weights()
        except MissingWeightsError as error:
            return f"**Score cannot run here yet.** {views.weights_missing(error.model)}"
        except ModuleNotFoundError as error:
            return f"**Score cannot run here:** {views.library_missing(error.name or 'torch')}"
        except UserError as error:
            return f"**Score cannot run here:** {views.plain_markdown(error.one_line())}"
        return ""

    def _score(self, upload: str | None, prompt_id: str | None, custom_prompt: str | None):
        from evaluator.images import ImageError, load_image

        def failed(message: str, below: str = ""):
            reply = error_reply(message) + (f"\n\n{below}" if below else "")
            return None, reply, views.verdict_frame(None, None), None

        if not upload:
            return failed("upload an image (PNG or JPEG)")
        try:
            image = bounded_image(load_image(upload))  # above a few megapixels: downscaled before the models
        except ImageError as error:
            return failed(f"cannot score this upload: {error}")
        try:
            record = self.prompt_of(prompt_id, custom_prompt)
            result, annotated = self._score_once(image, record)
        except UserError as error:  # a prompt problem, or e.g. MissingWeightsError
            parse = error if isinstance(error, PromptParseError) else error.__cause__
            if isinstance(parse, PromptParseError):  # the problem in one line, the grammar as a list below it
                return failed(f"cannot parse the prompt: {parse.problem}", views.grammar_markdown())
            return failed(str(error))
        except Exception as error:  # noqa: BLE001 - our sentence shown; the error and its traceback go to the log
            refused = zero_gpu_refusal(error)  # ZeroGPU's quota or queue: its reason and what to do
            if refused is not None:
                return failed(refused)
            log.exception("scoring failed")
            return failed("scoring failed here: an internal error (it is in the server's log)")
        out = self.work_dir.path / f"result_{record.prompt_id}_{time.time_ns()}.json"
        out.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        summary = views.verdict_summary(record, result, stand_in=self.stand_in)
        return annotated, summary, views.verdict_frame(record, result), str(out)

    def _score_once(self, image, record: PromptRecord):
        """Score on the GPU; weights found missing are not looked for again on every click (each
        look can take seconds online): the same answer comes at once for WEIGHTS_RETRY_SECONDS."""
        if self._missing_weights is not None:
            when, message = self._missing_weights
            if time.monotonic() - when < WEIGHTS_RETRY_SECONDS:
                raise UserError(message)
            self._missing_weights = None
        try:
            return self.score_on_gpu(image, record, "upload", 0)
        except MissingWeightsError as error:
            again = f" This app looks for them again in {WEIGHTS_RETRY_SECONDS / 60:.0f} minutes."
            message = views.weights_missing(error.model, markdown=False) + again
            self._missing_weights = (time.monotonic(), message)
            raise UserError(message) from None

    # -- Submit
    def submissions(self):
        return views.submissions_frame(self.store.list_entries())

    def submit(
        self,
        results_file: str | None,
        model_name: str,
        link: str,
        images_repo: str,
        revision: str,
        request: gr.Request,
        profile: gr.OAuthProfile | None = None,
    ):
        client = requester(request, profile)
        with self.submit_slots.hold(client) as held:  # one at a time per client (`ClientSlots`)
            try:
                if not held:
                    message = "you already have a submission being checked here; wait for its answer, then submit"
                    return error_reply(f"{message}; {NOT_COUNTED}"), self.submissions()
                return self._submit(results_file, model_name, link, images_repo, revision, client, profile)
            finally:
                self._tidy()

    def _submit(self, results_file, model_name, link, images_repo, revision, client: str, profile):
        if self.require_login and profile is None:
            return error_reply(
                "sign in with Hugging Face (button above) to submit: limits are per account"
            ), self.submissions()
        if not results_file:
            return error_reply("upload the results JSONL written by `negt2ibench score`"), self.submissions()
        now, limit = time.time(), self.limits.invalid_per_hour
        if self.invalid_uploads.count(client, now) >= limit:
            again = time.strftime("%H:%M UTC", time.gmtime(self.invalid_uploads.free_at(client, now, limit)))
            message = f"{limit} of your uploads in the last hour were refused as invalid files; try again after {again}"
            return error_reply(f"not submitted: {message}; {NOT_COUNTED}"), self.submissions()
        form = SubmissionForm(
            model_name=model_name or "",
            link=link or "",
            images_repo=images_repo or "",
            images_revision=revision or "",
            submitter=client,
        )
        try:
            entry = submit(
                self.store,
                form,
                results_file,
                prompts=self.index,
                score=None,  # never here: a verification job re-scores (`leaderboard.jobs.job_keeper`)
                open_images=self.open_images,
                resolve_revision=self.resolve_revision,
                config=self.config,
                limits=self.limits,
                check=False,
            )
        except SubmissionError as error:  # refused: nothing stored, not counted toward the day
            if isinstance(error, InvalidFileError):  # ... but toward the hour's invalid uploads
                self.invalid_uploads.add(client, now)
            return error_reply(f"not submitted: {error}"), self.submissions()
        except SubmissionStoredError as error:  # stored, then stuck: say what the store holds
            log.exception("submission stored but not advanced")
            return error_reply(self._stored_then_failed(error)), self.submissions()
        except Exception:  # noqa: BLE001 - failed before anything was stored
            log.exception("submission failed")
            message = "the submission failed before it was stored: an internal error (it is in the server's log)"
            return error_reply(f"{message}; {NOT_COUNTED}"), self.submissions()
        if entry.status == "rejected":
            gr.Warning(html.escape(f"submission rejected: {shorten(entry.reason, QUOTE_LIMIT)}"))
        elif self.on_stored is not None:
            self.on_stored()
        return views.submission_message(entry), self.submissions()

    def _stored_then_failed(self, error: SubmissionStoredError) -> str:
        try:
            entry = self.store.get_entry(error.submission_id)
        except Exception as unreadable:  # noqa: BLE001
            return f"the submission was {error}; reading it back failed: {unreadable}"
        return f"{entry.model_name}: {entry.status}: {entry.reason}; then {error}; it is retried automatically"
