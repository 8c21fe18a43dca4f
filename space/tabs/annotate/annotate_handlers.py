"""The Annotate tab's event handlers: sign in, save, back, forward.

Every handler gets the session (`{"annotator", "position"}`, a `gr.State`: server-side, one per
browser tab) and returns the whole page. Which image comes next is
`validation.assignment.next_image` over the answers in the store, so an annotator who signs in
again (another tab, after a restart) resumes at their first unanswered image. Answers are
written to the store on Save, one record per image × annotator (a second Save replaces it), so
nothing answered is lost on a restart.

Each image goes to 3 distinct annotators. An image shown to an annotator who has not answered
it yet is *reserved* for them (`Reservations`, in memory, expiring after 30 minutes), and counts
towards the three: two annotators working at once never both take an image's last slot. The
next image is chosen and reserved under one lock. Each annotator holds one reservation at a time,
and a client (`leaderboard.intake.identity.requester`) may bring at most `NEW_NAMES_PER_HOUR` new typed names
an hour (`NameLimiter`), so made-up names cannot hoard the slots. Typed names are normalised
(`leaderboard.text.submitted_names.name_key`: "alice", "Alice" and "alice" + a zero-width space are one annotator),
and a name that looks like a known annotator's (the same TR39 skeleton) is that annotator.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from dataset_builder.records import PromptLookup
from leaderboard.intake.identity import requester
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.text.submitted_names import MAX_NAME, confusable_key, name_key
from negt2ibench.core.errors import UserError
from validation.annotations import AnnotationRecord, ImageKey
from validation.assignment import Progress, next_image
from validation.labels import RATERS
from validation.sample import SampleItem

from . import annotate_views
from .annotation_images import SampleImages

log = logging.getLogger(__name__)
RESERVATION_SECONDS = 30 * 60
NEW_NAMES_PER_HOUR = 3  # typed annotator names a client may introduce per hour
HOUR = 3600.0


class NameLimiter:
    """At most `per_hour` new annotator names per client in any hour; names already known (with
    answers stored, or introduced by this client within the hour) are always let through."""

    def __init__(self, per_hour: int = NEW_NAMES_PER_HOUR, clock: Callable[[], float] = time.monotonic):
        self.per_hour = per_hour
        self.clock = clock
        self._introduced: dict[str, list[tuple[float, str]]] = {}
        self._lock = threading.Lock()

    def allow(self, client: str, name: str, known: Collection[str]) -> bool:
        if name in known:
            return True
        with self._lock:
            now = self.clock()
            recent = [(when, n) for when, n in self._introduced.get(client, []) if now - when < HOUR]
            self._introduced[client] = recent
            if any(n == name for _, n in recent):
                return True
            if len(recent) >= self.per_hour:
                return False
            recent.append((now, name))
            return True


class Reservations:
    """The image each annotator has open and not yet answered (one per annotator), until it expires."""

    def __init__(self, seconds: float = RESERVATION_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.seconds = seconds
        self.clock = clock
        self._held: dict[str, tuple[ImageKey, float]] = {}

    def hold(self, annotator: str, key: ImageKey) -> None:
        self._held[annotator] = (key, self.clock() + self.seconds)

    def release(self, annotator: str, key: ImageKey) -> None:
        if self._held.get(annotator, (None,))[0] == key:
            del self._held[annotator]

    def others(self, annotator: str) -> dict[ImageKey, set[str]]:
        """{image: annotators holding it}, other annotators' live reservations only."""
        now = self.clock()
        for name in [n for n, (_, expires) in self._held.items() if expires <= now]:
            del self._held[name]
        held: dict[ImageKey, set[str]] = {}
        for name, (key, _) in self._held.items():
            if name != annotator:
                held.setdefault(key, set()).add(name)
        return held


def annotator_name(name: str | None, profile: Any, require_login: bool, known: Collection[str] = ()) -> str:
    """Who is annotating: ``hf:<username>`` when signed in with Hugging Face, else the typed name,
    normalised (`name_key`); a name that looks like a `known` annotator's is that annotator."""
    username = getattr(profile, "username", None)
    if username:
        return f"hf:{username}"
    if require_login:
        raise UserError("sign in with Hugging Face (button above) to annotate")
    name = name_key(name or "")
    if not name:
        raise UserError("type your name to start")
    if len(name) > MAX_NAME:
        raise UserError(f"the name is longer than {MAX_NAME} characters")
    if name.startswith("hf:"):
        raise UserError("names starting with hf: belong to Hugging Face accounts: sign in instead")
    looks = confusable_key(name)
    return next((other for other in sorted(known) if confusable_key(other) == looks), name)


@dataclass
class AnnotateHandlers:
    sample: Sequence[SampleItem]
    prompts: PromptLookup
    store: LeaderboardStore
    images: SampleImages
    require_login: bool = False
    reservations: Reservations = field(default_factory=Reservations)
    per_image: int = RATERS
    names: NameLimiter = field(default_factory=NameLimiter)

    def __post_init__(self) -> None:
        self.sample = list(self.sample)
        self.positions: dict[ImageKey, int] = {}
        for position, item in enumerate(self.sample):
            if item.prompt_id not in self.prompts:
                raise UserError(
                    f"annotation sample line {position + 1}: unknown prompt id {item.prompt_id!r} "
                    "(a sample of another corpus?)"
                )
            if item.image_key in self.positions:
                raise UserError(f"annotation sample line {position + 1}: image {item.image_key} is listed twice")
            self.positions[item.image_key] = position
        self.slot_count = annotate_views.question_count(self.prompts, [item.prompt_id for item in self.sample])
        self._lock = threading.Lock()

    # -- the page ------------------------------------------------------------------------------

    def _page(
        self,
        session: dict,
        header: str,
        image: Any,
        progress: str,
        status: str,
        slots: Sequence[annotate_views.Slot],
    ) -> tuple:
        """(session, header, image, progress, status, *question components): the outputs of every event."""
        questions = [gr.update(label=s.label or "question", value=s.value, visible=s.visible) for s in slots]
        return (session, header, image, progress, status, *questions)

    def _unchanged(self, session: dict, status: str) -> tuple:
        return (session, gr.update(), gr.update(), gr.update(), status, *[gr.update()] * self.slot_count)

    def _blank(self, session: dict, header: str, status: str = "") -> tuple:
        return self._page(session, header, None, "", status, [annotate_views.Slot()] * self.slot_count)

    def _assign(self, annotator: str, skipped: Collection[int]) -> tuple[int | None, list[int], Progress]:
        """(the next new image's position, the positions the annotator has done, progress), under `_lock`."""
        offered = [item for p, item in enumerate(self.sample) if p not in skipped] if skipped else self.sample
        assignment = next_image(
            sample=offered,
            annotations=self.store.annotations(),
            annotator=annotator,
            per_image=self.per_image,
            reserved=self.reservations.others(annotator),
        )
        position = self.positions[assignment.item.image_key] if assignment.item is not None else None
        return position, sorted(self.positions[key] for key in assignment.history), assignment.progress

    def _go(
        self,
        annotator: str,
        choose: Callable[[int | None, list[int]], int | None],
        *,
        skipped: Sequence[int] = (),
        status: str = "",
        stay: tuple[dict, str] | None = None,
    ) -> tuple:
        """Show the image `choose(next_new, done)` picks; None: the next new image, or with `stay`
        (session, message) no move and the message."""
        with self._lock:
            upcoming, done, progress = self._assign(annotator, skipped)
            position = choose(upcoming, done)
            if position is None and stay is not None:
                return self._unchanged(*stay)
            if position is None:
                position = upcoming
            if position is not None and position not in done:
                self.reservations.hold(annotator, self.sample[position].image_key)
        session = {"annotator": annotator, "position": position, "skipped": list(skipped), "shown": False}
        reviewing = position in done
        line = annotate_views.progress_markdown(annotator, progress, reviewing=reviewing, per_image=self.per_image)
        blank = [annotate_views.Slot()] * self.slot_count
        if position is None:
            return self._page(session, annotate_views.finished_markdown(progress), None, line, status, blank)
        item = self.sample[position]
        prompt = self.prompts[item.prompt_id]
        header = annotate_views.prompt_markdown(prompt, done.index(position) + 1 if reviewing else len(done) + 1)
        try:
            image = self.images.load(item)
        except UserError as error:
            log.warning("annotation image unavailable: %s", error)
            # the reason names the split (the generator): the log gets it, the annotator does not
            message = view_error(
                "this image cannot be shown (the reason is in the server log). "
                "Press → to skip it for now, and tell the study's organiser."
            )
            return self._page(session, header, None, line, message, blank)
        session["shown"] = True
        questions = annotate_views.questions_of(prompt)
        record = self.store.get_annotation(item.image_key, annotator) if reviewing else None
        slots = annotate_views.slots(questions, annotate_views.stored_answers(questions, record), self.slot_count)
        return self._page(session, header, image, line, status, slots)

    # -- events --------------------------------------------------------------------------------

    def start(
        self,
        name: str | None,
        session: dict | None,
        request: gr.Request | None = None,
        profile: gr.OAuthProfile | None = None,
    ) -> tuple:
        """Sign in (a typed name, or the Hugging Face account) and show the first unanswered image."""
        session = dict(session or {})
        if not self.sample:
            return self._blank(session, annotate_views.no_sample_markdown())
        known = {record.annotator for record in self.store.annotations()}
        try:
            annotator = annotator_name(name, profile, self.require_login, known)
            if not annotator.startswith("hf:") and not self.names.allow(requester(request), annotator, known):
                raise UserError(
                    f"this client brought {self.names.per_hour} new names within the hour; "
                    "go on with one of them, or sign in with Hugging Face"
                )
        except UserError as error:
            return self._blank(session, annotate_views.signed_out_markdown(self.require_login), view_error(str(error)))
        return self._go(annotator, lambda upcoming, done: None)

    def save(self, session: dict | None, *answers: str | None) -> tuple:
        """Store the shown image's answers (replacing the annotator's earlier ones), then go on."""
        session = session or {}
        annotator, position = session.get("annotator"), session.get("position")
        if not annotator:
            return self._unchanged(session, view_error("press Start first"))
        if position is None:
            return self._unchanged(session, "Nothing left to annotate.")
        if not session.get("shown"):
            return self._unchanged(session, view_error("this image could not be shown: press → to skip it"))
        item = self.sample[position]
        questions = annotate_views.questions_of(self.prompts[item.prompt_id])
        missing = annotate_views.unanswered(questions, answers)
        if missing:
            numbers = ", ".join(str(n) for n in missing)
            return self._unchanged(session, view_error(f"answer question(s) {numbers} first (yes or no)"))
        objects, statements = annotate_views.raw_answers(questions, answers)
        record = AnnotationRecord(
            prompt_id=item.prompt_id,
            model_key=item.model_key,
            sample_index=item.sample_index,
            annotator=annotator,
            objects=objects,
            statements=statements,
        )
        try:
            self.store.add_annotation(record)
        except Exception as error:  # noqa: BLE001 - the answers stay on screen; the traceback goes to the log
            log.exception("annotation not stored")
            return self._unchanged(session, view_error(f"not saved, try again: {type(error).__name__}: {error}"))
        self.reservations.release(annotator, item.image_key)

        def after(upcoming: int | None, done: list[int]) -> int | None:
            return next((p for p in done if p > position), None)

        return self._go(annotator, after, skipped=session.get("skipped", ()), status="Saved.")

    def back(self, session: dict | None) -> tuple:
        """The annotator's previous image (in sample order), with their answers, to change them."""
        session = session or {}
        annotator, position = session.get("annotator"), session.get("position")
        if not annotator:
            return self._unchanged(session, view_error("press Start first"))
        current = len(self.sample) if position is None else position

        def before(upcoming: int | None, done: list[int]) -> int | None:
            return next((p for p in reversed(done) if p < current), None)

        skipped = session.get("skipped", ())
        return self._go(annotator, before, skipped=skipped, stay=(session, "This is your first image."))

    def forward(self, session: dict | None) -> tuple:
        """The annotator's next answered image; after the last one, the next new image. On an image
        that could not be shown, skip it for the rest of the session."""
        session = session or {}
        annotator, position = session.get("annotator"), session.get("position")
        if not annotator:
            return self._unchanged(session, view_error("press Start first"))
        current = len(self.sample) if position is None else position
        skipped = list(session.get("skipped", ()))
        if position is not None and not session.get("shown"):
            skipped.append(position)

        def after(upcoming: int | None, done: list[int]) -> int | None:
            later = next((p for p in done if p > current), None)
            if later is not None:
                return later
            return upcoming if upcoming not in (None, position) else None

        if position is None:
            message = "Nothing left for you."
        else:
            message = "Answer every question and press Save to go on."
        return self._go(annotator, after, skipped=skipped, stay=(session, message))


def view_error(message: str) -> str:
    return f"⚠️ {message}"
