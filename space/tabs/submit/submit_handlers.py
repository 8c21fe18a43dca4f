"""The Submit tab's handlers: store a submitted results file, one at a time per client, and list
the submissions with where each verification job is.

Methods over the state the Score and Submit tabs share (`space.shared_state.SharedState`: the
store, the limits, the per-client slots, the uploads refused as invalid); `space.app.Handlers` is
the object the app builds. A refused or failed submission becomes a status message
(`error_reply`), never a stack trace.
"""

from __future__ import annotations

import html
import logging
import time

import gradio as gr

from leaderboard.intake.identity import requester
from leaderboard.intake.submissions import (
    NOT_COUNTED,
    InvalidFileError,
    SubmissionError,
    SubmissionForm,
    SubmissionStoredError,
    submit,
)
from leaderboard.text.submitted_names import QUOTE_LIMIT, shorten
from space.error_messages import error_reply
from space.shared_state import SharedState

from .submit_views import submission_message, submissions_frame

log = logging.getLogger(__name__)


class SubmitHandlers(SharedState):
    """The Submit tab's handlers: `submit` and `submissions` (the list)."""

    def submissions(self):
        return submissions_frame(self.store.list_entries())

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
        return submission_message(entry), self.submissions()

    def _stored_then_failed(self, error: SubmissionStoredError) -> str:
        try:
            entry = self.store.get_entry(error.submission_id)
        except Exception as unreadable:  # noqa: BLE001
            return f"the submission was {error}; reading it back failed: {unreadable}"
        return f"{entry.model_name}: {entry.status}: {entry.reason}; then {error}; it is retried automatically"
