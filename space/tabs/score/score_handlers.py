"""The Score tab's handlers: score an upload against a benchmark prompt or a typed one, one at a
time per client, and say before anything is scored when the scorer cannot run here.

Methods over the state the Score and Submit tabs share (`space.shared_state.SharedState`: the
scorer, the upload cache, the per-client slots); `space.app.Handlers` is the object the app
builds. A bad input becomes a status message (`error_reply`), never a stack trace.
"""

from __future__ import annotations

import logging
import time

import gradio as gr

from dataset_builder.grammar import PromptParseError
from dataset_builder.records import PromptRecord
from leaderboard.intake.identity import requester
from leaderboard.text.submitted_names import plain_markdown
from negt2ibench.api import resolve_prompt
from negt2ibench.core.errors import MissingWeightsError, UserError
from space.error_messages import error_reply
from space.gpu_calls import zero_gpu_refusal
from space.resources import bounded_image
from space.shared_state import SharedState
from space.verdict_views import stand_in_note, verdict_frame, verdict_summary

from .score_views import grammar_markdown, library_missing, weights_missing

WEIGHTS_RETRY_SECONDS = 300.0  # after "weights missing", clicks answer at once for this long, then retry
MAX_PROMPT_CHARS = 400  # a typed prompt, at most (the benchmark's longest is under 250)

log = logging.getLogger(__name__)


class ScoreHandlers(SharedState):
    """The Score tab's handlers (`score`, `scorer_notice`) and the prompt they score against (`prompt_of`,
    which the judge panel uses too)."""

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
                    return None, error_reply(message), verdict_frame(None, None), None
                return self._score(upload, prompt_id, custom_prompt)
            finally:
                self._tidy()

    def scorer_notice(self) -> str:
        """What the Score tab says before anything is scored: that a stand-in scores here, or that
        the scorer cannot run (its weights or libraries missing: a look at the disk, no load), and
        how to fix it; "" when the models are here."""
        if self.stand_in:
            return stand_in_note(self.stand_in)
        if self.check_weights is None:
            return ""
        try:
            self.check_weights()
        except MissingWeightsError as error:
            return f"**Score cannot run here yet.** {weights_missing(error.model)}"
        except ModuleNotFoundError as error:
            return f"**Score cannot run here:** {library_missing(error.name or 'torch')}"
        except UserError as error:
            return f"**Score cannot run here:** {plain_markdown(error.one_line())}"
        return ""

    def _score(self, upload: str | None, prompt_id: str | None, custom_prompt: str | None):
        from evaluator.images import ImageError, load_image

        def failed(message: str, below: str = ""):
            reply = error_reply(message) + (f"\n\n{below}" if below else "")
            return None, reply, verdict_frame(None, None), None

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
                return failed(f"cannot parse the prompt: {parse.problem}", grammar_markdown())
            return failed(str(error))
        except Exception as error:  # noqa: BLE001 - our sentence shown; the error and its traceback go to the log
            refused = zero_gpu_refusal(error)  # ZeroGPU's quota or queue: its reason and what to do
            if refused is not None:
                return failed(refused)
            log.exception("scoring failed")
            return failed("scoring failed here: an internal error (it is in the server's log)")
        out = self.work_dir.path / f"result_{record.prompt_id}_{time.time_ns()}.json"
        out.write_text(result.model_dump_json(indent=2), encoding="utf-8")
        summary = verdict_summary(record, result, stand_in=self.stand_in)
        return annotated, summary, verdict_frame(record, result), str(out)

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
        except MissingWeightsError:
            # The tab's note (`scorer_notice`) says which weights and how to get them: said once, there.
            message = (
                "not scored: the scorer's model weights are not on this machine (the note at the top of this tab "
                f"says how to get them; this app looks for them again in {WEIGHTS_RETRY_SECONDS / 60:.0f} minutes)"
            )
            self._missing_weights = (time.monotonic(), message)
            raise UserError(message) from None
