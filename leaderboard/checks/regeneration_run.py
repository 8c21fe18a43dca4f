"""The regeneration check of a submission: regenerate a seeded sample of its images from the recorded model and compare.

The policy (k images, at most m not the model's own, the similarity and its threshold t) is
`leaderboard.checks.regeneration_policy`. Here it runs on a stored entry, as a step of the verification job
(`leaderboard.jobs.verify_job`), before the spot check:

1. the sample is drawn with the entry's own seed (the server secret, the submission id and its
   results, `regeneration_seed`); its images and their records (seed, model, params) are read from
   the submitted images dataset (`ParquetImages.image_records`);
2. the records name the model (`generation.reproduce.recorded_spec`). One that names none the
   Space can load (a closed model, a private checkpoint, images imported or made by a function, a
   repo not pinned to a commit), or whose weights cannot be loaded, gives `not_reproduced`: the
   entry goes on to the spot check and, verified, is ranked with the mark *images not reproduced*;
3. otherwise the run claims the entry, loads the model (`GeneratorLoader`), regenerates each image
   with the benchmark's seed for its sample and compares (`image_similarity`). An image whose
   recorded seed is not that seed is not the model's own without regenerating it. More than m not
   the model's own: **rejected** (the account's sampled verifications are held, as after a spot
   check); else `reproduced`, and the spot check runs next.

Each regenerated image's similarity is kept in the work folder (``WORK/<id>.regen.jsonl``), so a
rerun regenerates only the rest. The pairs shown on the entry's page (those not the model's own
first) are kept in the entry as small JPEGs (`RegeneratedPair`).
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import verification_secret
from leaderboard.checks.image_similarity import image_similarity
from leaderboard.checks.regeneration_policy import (
    RegenerationPlan,
    draw_regeneration_sample,
    regeneration_plan,
    regeneration_seed,
)
from leaderboard.checks.spot_check_policy import results_digest
from leaderboard.checks.verification_run import claim_for, reject
from leaderboard.store.entries import Entry, RegeneratedPair, Regeneration, RunClaim
from leaderboard.store.image_sources import GenerationRecord, ImageSource, ImagesUnreachable
from leaderboard.store.ranking import NOT_REPRODUCED
from leaderboard.store.sqlite_store import LeaderboardStore
from leaderboard.store.states import transition
from negt2ibench.core.errors import NegT2IError

# Loads the recorded model for regeneration: a `generation.registry.ModelSpec` -> an `ImageGenerator`.
GeneratorLoader = Callable[[Any], Any]
SHOWN_PAIRS = 8  # pairs kept with their images for the entry's page
THUMBNAIL_SIDE = 128
BATCH = 4  # images per generation call


def thumbnail(image: Any, side: int = THUMBNAIL_SIDE) -> str:
    """A small JPEG of IMAGE, as base64 text for the entry's record.

    Args:
        image: a PIL image.
        side: its longer side in the JPEG.

    Returns:
        The JPEG (quality 85), base64-encoded.
    """
    copy = image.convert("RGB")
    copy.thumbnail((side, side))
    buffer = io.BytesIO()
    copy.save(buffer, format="JPEG", quality=85)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def regeneration_sample(
    entry: Entry, results: Sequence[ResultRecord], secret: bytes | None
) -> tuple[RegenerationPlan, list]:
    """The plan and the keys of the entry's regeneration sample.

    Args:
        entry: the entry checked.
        results: its records, in stored order.
        secret: the server's secret (default: `verification_secret()`).

    Returns:
        The plan for the file's size, and the sampled images' (prompt_id, sample_index) keys in
        stored order.
    """
    plan = regeneration_plan(len(results))
    digest = results_digest(record.model_dump_json() for record in results)
    seed = regeneration_seed(secret or verification_secret(), entry.submission_id, digest)
    chosen = [results[position] for position in draw_regeneration_sample(len(results), plan, seed)]
    return plan, [(record.prompt_id, record.sample_index) for record in chosen]


class KeptPairs:
    """The pairs compared so far, kept one JSON line each in the work folder (a rerun reads them)."""

    def __init__(self, path: Path):
        self.path = path
        self.pairs: dict[tuple[str, int], dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    kept = json.loads(line)
                    self.pairs[(str(kept["prompt_id"]), int(kept["sample_index"]))] = kept
                except (ValueError, KeyError, TypeError):
                    continue  # a torn last line: that image is compared again

    def add(self, kept: dict[str, Any]) -> None:
        """Keep one compared pair: in memory, and appended to the work folder's file.

        Args:
            kept: the pair's prompt_id, sample_index, similarity, own, why (and its regenerated JPEG).
        """
        self.pairs[(kept["prompt_id"], kept["sample_index"])] = kept
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(kept) + "\n")


def _record_reader(images: ImageSource, keys: list) -> Any:
    reader = getattr(images, "image_records", None)
    if reader is None:
        raise _NotReproduced("its images' source records no generation parameters")
    return reader(keys)


class _NotReproduced(Exception):
    """Why the entry's images cannot be regenerated, and the model its records name ("" when none)."""

    def __init__(self, why: str, model_id: str = ""):
        super().__init__(why)
        self.model_id = model_id


def _spec_of(record: GenerationRecord):
    from generation.reproduce import NotReproducible, recorded_spec

    if record.params_problem:
        raise _NotReproduced(record.params_problem, record.model_id)
    try:
        return recorded_spec(record.model_id, record.model_key, record.params)
    except NotReproducible as error:
        raise _NotReproduced(error.one_line(), record.model_id) from None


def _write_not_reproduced(store: LeaderboardStore, entry: Entry, why: str, model_id: str = "") -> Entry:
    """The outcome `not_reproduced`, written while the entry still waits for its checks and has none."""
    outcome = Regeneration(outcome="not_reproduced", reason=f"{NOT_REPRODUCED}: {why}", model_id=model_id)

    def check(current: Entry) -> str:
        if current.status not in ("validated", "pending") or current.regeneration is not None:
            return f"it is {current.status}, its regeneration {'done' if current.regeneration else 'not due'}"
        return ""

    return store.update_entry(entry.submission_id, check, regeneration=outcome)


class Comparer:
    """Regenerates sampled images with one loaded model and compares them with the submitted ones."""

    def __init__(
        self, generator: Any, spec: Any, prompts: PromptIndex, plan: RegenerationPlan, kept: KeptPairs, keys: list
    ):
        self.generator, self.spec, self.prompts, self.plan, self.kept = generator, spec, prompts, plan, kept
        self.keys = keys
        self.thumbnails: dict[tuple[str, int], str] = {}  # the submitted images, small, for the shown pairs

    def compare(self, batch: list[tuple[tuple[str, int], Any, GenerationRecord]]) -> None:
        """Regenerate and compare a batch of submitted images, keeping each pair.

        An image already compared (kept from an earlier run) is not regenerated; one whose record
        cannot be reproduced (its seed, another model or settings) is kept as not the model's own, with
        why.

        Args:
            batch: ((prompt_id, sample_index), the submitted image, its generation record) of each image.
        """
        from generation.reproduce import seed_problem
        from generation.work import image_seed

        todo = []
        for key, image, record in batch:
            self.thumbnails[key] = thumbnail(image)
            if key in self.kept.pairs:
                continue
            why = seed_problem(key[0], key[1], record.seed if record.seed is not None else -1, record.params)
            if not why and _spec_of_or_none(record) != self.spec:
                why = "its record names another model or other settings than the rest of the sample"
            if why:
                self.kept.add(
                    {"prompt_id": key[0], "sample_index": key[1], "similarity": None, "own": False, "why": why}
                )
            else:
                todo.append((key, image))
        if not todo:
            return
        made = self.generator([self.prompts[key[0]].prompt for key, _ in todo], [image_seed(*key) for key, _ in todo])
        for (key, image), generated in zip(todo, made, strict=True):
            similarity = round(image_similarity(image, generated.image), 4)
            own = self.plan.is_own(similarity)
            why = "" if own else f"similarity {similarity:.2f} is below {self.plan.threshold:g}"
            self.kept.add(
                {
                    "prompt_id": key[0],
                    "sample_index": key[1],
                    "similarity": similarity,
                    "own": own,
                    "why": why,
                    "regenerated_jpeg": thumbnail(generated.image),
                }
            )

    def compared(self) -> list[dict[str, Any]]:
        """The pairs of this sample compared so far.

        Returns:
            Them in the sample's order (the work folder may keep others, of another secret's).
        """
        return [self.kept.pairs[key] for key in self.keys if key in self.kept.pairs]

    def not_own(self) -> int:
        """How many of the pairs compared so far are not the model's own.

        Returns:
            The count.
        """
        return sum(not kept["own"] for kept in self.compared())

    def pairs(self) -> list[RegeneratedPair]:
        """Every compared pair, for the entry's record.

        Returns:
            The pairs, those not the model's own first (lowest similarity first); the first SHOWN_PAIRS
            with their images as JPEGs.
        """
        compared = self.compared()
        compared.sort(key=lambda kept: (kept["own"], kept["similarity"] if kept["similarity"] is not None else -1))
        pairs = []
        for position, kept in enumerate(compared):
            shown = position < SHOWN_PAIRS
            key = (kept["prompt_id"], kept["sample_index"])
            pairs.append(
                RegeneratedPair(
                    prompt_id=kept["prompt_id"],
                    sample_index=kept["sample_index"],
                    similarity=kept["similarity"],
                    own=kept["own"],
                    why=kept["why"],
                    submitted_jpeg=self.thumbnails.get(key, "") if shown else "",
                    regenerated_jpeg=kept.get("regenerated_jpeg", "") if shown else "",
                )
            )
        return pairs


def _spec_of_or_none(record: GenerationRecord):
    try:
        return _spec_of(record)
    except _NotReproduced:
        return None


def run_regeneration(
    store: LeaderboardStore,
    entry: Entry,
    results: list[ResultRecord],
    *,
    prompts: PromptIndex,
    open_images: Callable[[str, str, str], ImageSource],
    load: GeneratorLoader | None,
    run: RunClaim,
    work: Path,
    secret: bytes | None = None,
    say: Callable[[str], None] = print,
) -> Entry:
    """Regeneration-check one entry: validated | pending → pending with its `regeneration`, or rejected.

    Args:
        store: the leaderboard's store.
        entry: the entry to check.
        results: its records, in stored order.
        prompts: the prompts the records are of.
        open_images: opens the entry's images (repo, revision, split).
        load: loads the generator the records name (None: this run has no generation step, so the
            images are not reproduced).
        run: this run's claim.
        work: the folder compared pairs are kept in, so an interrupted run resumes.
        secret: the server's secret (default: `verification_secret()`).
        say: where progress lines go.

    Returns:
        The entry as stored afterwards (reproduced or not reproduced, rejected, or waiting). Images
        that cannot be read leave it as it is (the next run tries again), once claimed waiting.

    Raises:
        StaleEntryError: another run holds the entry.
    """
    plan, keys = regeneration_sample(entry, results, secret)
    try:
        spec, generator, rows = _source_and_generator(entry, results[0].model_key, keys, open_images, load)
    except _NotReproduced as why:
        return _write_not_reproduced(store, entry, str(why), why.model_id)
    except ImagesUnreachable:
        return entry  # tried again by the next run; the spot check, next, says why the entry waits
    except NegT2IError as error:  # the weights could not be loaded (missing here, private, gated ...)
        return _write_not_reproduced(store, entry, f"the model could not be loaded: {error.one_line()}")
    except (ImportError, AttributeError, TypeError, ValueError) as error:  # a repo that is no such pipeline
        return _write_not_reproduced(store, entry, f"the model could not be loaded ({type(error).__name__})")
    running = f"regeneration check running since {{started}} ({run.where}): {plan.describe()}"
    entry = claim_for(store, entry, run, running, attempt=False)
    kept = KeptPairs(work / f"{entry.submission_id}.regen.jsonl")
    if kept.pairs:
        say(f"{entry.submission_id[:8]}: {len(kept.pairs)} compared images read from {kept.path}")
    comparer = Comparer(generator, spec, prompts, plan, kept, keys)
    try:
        _compare_in_batches(comparer, plan, rows)
    except ImagesUnreachable as error:
        return _waits(store, entry, str(error), run.run_id)
    return _outcome(store, entry, plan, comparer, spec, run)


def _source_and_generator(
    entry: Entry, split: str, keys: list[Any], open_images: Callable[[str, str, str], ImageSource], load: Any
) -> tuple[Any, Any, Iterator[Any]]:
    """The recorded model, its generator and the sampled rows (read lazily: the check may stop early).
    Raises _NotReproduced, ImagesUnreachable, or what loading the model raises."""
    images = open_images(entry.images_repo, entry.images_revision, split)
    rows = _record_reader(images, keys)
    first = next(rows)
    model_id = first[2].model_id
    spec = _spec_of(first[2])
    if load is None:
        raise _NotReproduced("this verification run has no generation step", model_id)
    try:
        generator = load(spec)
    except NegT2IError as error:  # the weights could not be loaded (missing here, private, gated ...)
        raise _NotReproduced(f"the model could not be loaded: {error.one_line()}", model_id) from None
    except (ImportError, AttributeError, TypeError, ValueError) as error:  # a repo that is no such pipeline
        raise _NotReproduced(f"the model could not be loaded ({type(error).__name__})", model_id) from None
    return spec, generator, itertools.chain([first], rows)


def _compare_in_batches(comparer: Comparer, plan: RegenerationPlan, rows: Iterable[Any]) -> None:
    """Compare ROWS in batches of BATCH, stopping once more images than the plan allows are not the model's own."""
    batch: list[Any] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            comparer.compare(batch)
            batch = []
            if not plan.accepts(comparer.not_own()):
                return
    if batch and plan.accepts(comparer.not_own()):
        comparer.compare(batch)


def _outcome(store, entry, plan: RegenerationPlan, comparer: Comparer, spec, run: RunClaim) -> Entry:
    not_own, checked = comparer.not_own(), len(comparer.compared())
    outcome: Literal["reproduced", "rejected"] = "reproduced" if plan.accepts(not_own) else "rejected"
    where = f"{spec.hub_id}" + (f"@{spec.revision[:12]}" if spec.revision else "")
    if outcome == "rejected":
        so_far = "" if checked >= plan.sample_size else f", stopped after {checked} of {plan.sample_size}"
        reason = (
            f"regeneration check: {not_own} of {checked} sampled images are not the model's own ({where}, "
            f"the benchmark's seeds{so_far}), more than the {plan.max_not_own} of {plan.sample_size} allowed; "
            "the pairs are on its page"
        )
    else:
        reason = (
            f"images regenerated from {where}: {checked - not_own} of {checked} are the model's own "
            f"(similarity >= {plan.threshold:g}; at most {plan.max_not_own} may not be)"
        )
    record = Regeneration(
        outcome=outcome,
        reason=reason,
        model_id=spec.hub_id,
        commit=spec.revision or "",
        checked=checked,
        not_own=not_own,
        allowed=plan.max_not_own,
        threshold=plan.threshold,
        pairs=comparer.pairs(),
    )
    if outcome == "rejected":
        return reject(store, entry, reason, run.run_id, regeneration=record, checked_at=time.time())
    return transition(
        store,
        entry,
        "pending",
        f"{reason}; the spot check comes next",
        run_id=run.run_id,
        run=None,
        regeneration=record,
    )


def _waits(store: LeaderboardStore, entry: Entry, why: str, run_id: str | None = None) -> Entry:
    """The images could not be read: the entry waits (pending, saying why) for the next run."""
    reason = f"regeneration check waits: {why}; it is retried automatically"
    return transition(store, entry, "pending", reason, run_id=run_id, run=None)
