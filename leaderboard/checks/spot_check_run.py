"""The spot check of a submission: re-score a sample of its images from the submitted images dataset.

How many images, and how many may disagree, is the policy of `leaderboard.checks.spot_check_policy`
(`spot_check_plan`, with its guarantee); which images is drawn with `sample_seed`, from the
server's secret (`verification_secret`), the stored submission id and its results, so nobody
knows the sample before submitting. `spot_check` re-scores the sample in batches (`ScoreFn`:
the same `Evaluator.score_many` as `negt2ibench score`) and compares the fields of each record
that `leaderboard.checks.compared_fields` names (verdicts, causes, objects, error state);
`spot_check_failure` says in one line why a spot check could not run at all (images unreachable,
the models missing here, a GPU quota or memory error), so the submission can wait, truthfully,
for the next attempt (`leaderboard.intake.submissions`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from PIL import Image

from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import ScoreFn, verification_secret
from leaderboard.checks.compared_fields import disagreement
from leaderboard.checks.spot_check_policy import SpotCheckPlan, draw_sample, results_digest, sample_seed
from leaderboard.store.image_sources import ImageSource, ImagesUnreachable, unreachable_reason
from negt2ibench.core.errors import MissingWeightsError, NegT2IError

log = logging.getLogger(__name__)

SPOT_CHECK_BATCH = 16  # images per re-scoring call (one `spaces.GPU` call each on ZeroGPU)


def submission_seed(submission_id: str, results: Sequence[ResultRecord], secret: bytes | None = None) -> int:
    """The seed of a stored submission's sample (`leaderboard.checks.spot_check_policy.sample_seed`).

    Args:
        submission_id: the submission's id.
        results: its records, in stored order (digested as their JSON lines).
        secret: the server's secret (default: `verification_secret()`).

    Returns:
        The sample's seed.
    """
    digest = results_digest(record.model_dump_json() for record in results)
    return sample_seed(secret or verification_secret(), submission_id, digest)


@dataclass
class SpotCheckOutcome:
    """What a spot check found: `checked` images re-scored, the `disagreements` among them."""

    plan: SpotCheckPlan
    checked: int = 0
    disagreements: list[str] = field(default_factory=list)

    @property
    def accepted(self) -> bool:
        return self.plan.accepts(len(self.disagreements))


def spot_check(
    results: Sequence[ResultRecord],
    images: ImageSource,
    prompts: PromptIndex,
    score: ScoreFn,
    *,
    plan: SpotCheckPlan,
    seed: int,
    batch_size: int = SPOT_CHECK_BATCH,
) -> SpotCheckOutcome:
    """Re-score the plan's sample of the submitted images, in batches.

    Stops as soon as more images disagree than the plan tolerates (the outcome is then a
    rejection).

    Args:
        results: the submitted records, in stored order.
        images: the submission's images source, read for the sample only.
        prompts: the prompts the records are of.
        score: re-scores a batch (images, prompts, model key, sample indices) into records.
        plan: the sample's size and tolerance.
        seed: the sample's seed (`submission_seed`).
        batch_size: images re-scored at once.

    Returns:
        The images checked and why each disagreeing one disagrees (`compared.disagreement`).

    Raises:
        ImagesUnreachable: the images source could not be read; any error of `score` goes through too
            (the caller says why in `spot_check_failure`).
    """
    chosen = [results[position] for position in draw_sample(len(results), plan, seed)]
    by_key = {(record.prompt_id, record.sample_index): record for record in chosen}
    outcome = SpotCheckOutcome(plan)
    batch: list[tuple[ResultRecord, Image.Image]] = []

    def flush() -> None:
        submitted = [record for record, _ in batch]
        rescored = score(
            [image for _, image in batch],
            [prompts[record.prompt_id] for record in submitted],
            submitted[0].model_key,
            [record.sample_index for record in submitted],
        )
        for theirs, ours in zip(submitted, rescored, strict=True):
            why = disagreement(theirs, ours)
            if why:
                outcome.disagreements.append(why)
        outcome.checked += len(batch)
        batch.clear()

    for key, image in images.images(list(by_key)):
        batch.append((by_key[key], image))
        if len(batch) >= batch_size:
            flush()
            if not outcome.accepted:
                break
    if batch and outcome.accepted:
        flush()
    return outcome


def spot_check_failure(error: BaseException) -> str:
    """Why a spot check could not run, in one public sentence of ours.

    The submission waits for the next attempt; the full error goes to the log, never into the
    reason. Any error counts: the images dataset not reachable, the evaluator's weights missing
    here, a ZeroGPU quota error (a `gradio.Error` from `spaces`), the GPU out of memory, or anything
    else.

    Args:
        error: what stopped the check.

    Returns:
        The reason, in our words (a `NegT2IError`'s own one line; a generic sentence for the rest).
    """
    if isinstance(error, ImagesUnreachable):
        return unreachable_reason(error)  # its message is ours (`leaderboard.store.image_sources`)
    log.warning("a spot check could not run: %s: %s", type(error).__name__, error)
    message = getattr(error, "message", None)  # gradio.Error's own text (its str() is a repr)
    text = str(message if isinstance(message, str) else error).lower()
    if isinstance(error, MissingWeightsError):
        return "the scorer's model weights are not on this machine"
    if "out of memory" in text or "OutOfMemory" in type(error).__name__:
        return "the GPU ran out of memory"
    if "quota" in text or "gpu limit" in text:
        return "no GPU time left here now (the ZeroGPU quota is spent)"
    if isinstance(error, NegT2IError):  # our own errors speak our words
        return f"the spot check could not run: {error.one_line()}"
    return "the spot check failed here (an internal error; it is in the server's log)"
