"""The regeneration check's pairs: each sampled image regenerated, measured against the submitted one
(`regeneration_policy.own_image`), its regeneration scored and its verdicts compared
(`regeneration_policy.verdict_moves`), and kept so that a rerun, or the next job of a split check,
goes on from them.

`KeptPairs` keeps one JSON line per pair in the work folder (``WORK/<id>.regen.<run>.jsonl``, a new
file for a rerun on another machine) and takes the pairs a split check's earlier job stored in the
entry (`Regeneration.pairs` of a `partial` outcome). `Comparer` regenerates a batch with one loaded
model and compares it. `pair_records` turns the kept pairs into the entry's `RegeneratedPair`s (those
not the model's own first, the first `SHOWN_PAIRS` with their JPEGs).
"""

from __future__ import annotations

import base64
import io
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dataset_builder.records import PromptIndex
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import ScoreFn
from leaderboard.checks.regeneration_policy import (
    MEASURE,
    REGION_SHARE,
    RegenerationPlan,
    own_image,
    region_text,
    verdict_moves,
)
from leaderboard.store.entries import RegeneratedPair
from leaderboard.store.image_sources import GenerationRecord

Key = tuple[str, int]
SHOWN_PAIRS = 8  # pairs kept with their images for the entry's page
THUMBNAIL_SIDE = 128


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


def measure_tag(plan: RegenerationPlan) -> str:
    """What a kept pair was measured with: a pair measured otherwise (an older version's) is measured again.

    Args:
        plan: the check's plan.

    Returns:
        The measure and its threshold, in words.
    """
    return f"{MEASURE}, t {plan.threshold:g}"


class KeptPairs:
    """The pairs compared so far: from the entry (a split check's earlier jobs) and the work folder."""

    def __init__(self, path: Path, tag: str, stored: Sequence[RegeneratedPair] = ()):
        self.path, self.tag = path, tag
        self.pairs: dict[Key, dict[str, Any]] = {}
        for pair in stored:
            self.pairs[(pair.prompt_id, pair.sample_index)] = {**pair.model_dump(), "measure": tag}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    kept = json.loads(line)
                    if kept.get("measure") == tag:
                        self.pairs[(str(kept["prompt_id"]), int(kept["sample_index"]))] = kept
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue  # a torn last line: that image is compared again

    def add(self, kept: dict[str, Any]) -> None:
        """Keep one compared pair: in memory, and appended to the work folder's file.

        Args:
            kept: the pair's fields (`RegeneratedPair`'s, and its JPEGs).
        """
        kept = {**kept, "measure": self.tag}
        self.pairs[(kept["prompt_id"], kept["sample_index"])] = kept
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(kept) + "\n")


def not_own_why(measured: Any, threshold: float) -> str:
    """Why a measured pair is not the model's own, in words the entry's page shows.

    Args:
        measured: the pair's `OwnImage`.
        threshold: t.

    Returns:
        "similarity S: its worst region of 2% of the image (where) differs by CIEDE2000 D, more than t = T".
    """
    return (
        f"similarity {math.floor(100 * measured.within) / 100:.2f}: its worst region of {REGION_SHARE:.0%} of the "
        f"image ({region_text(measured.region)}) differs by CIEDE2000 {measured.difference:.1f}, more than "
        f"t = {threshold:g}"
    )


class Comparer:
    """Regenerates sampled images with one loaded model, measures and scores them, and keeps each pair."""

    def __init__(self, generator: Any, prompts: PromptIndex, plan: RegenerationPlan, kept: KeptPairs, **run: Any):
        self.generator, self.prompts, self.plan, self.kept = generator, prompts, plan, kept
        self.keys: list[Key] = run["keys"]
        self.same_model = run["same_model"]  # (GenerationRecord) -> why the record names another model ("")
        self.submitted: dict[Key, ResultRecord] = run["submitted"]
        self.score: ScoreFn | None = run.get("score")
        self.split: str = run["split"]
        self.thumbnails: dict[Key, str] = {}  # the submitted images, small, for the shown pairs

    def compare(self, batch: list[tuple[Key, Any, GenerationRecord]]) -> None:
        """Regenerate, measure and score a batch of submitted images, keeping each pair.

        An image already compared is not regenerated; one whose record cannot be reproduced (its seed,
        another model or settings than the sample's first) is kept as not the model's own, with why.

        Args:
            batch: ((prompt_id, sample_index), the submitted image, its generation record) of each image.
        """
        from generation.reproduce import seed_problem

        todo = []
        for key, image, record in batch:
            self.thumbnails[key] = thumbnail(image)
            if key in self.kept.pairs:
                continue
            why = seed_problem(key[0], key[1], record.seed if record.seed is not None else -1, record.params)
            why = why or self.same_model(record)
            if why:
                self.kept.add({"prompt_id": key[0], "sample_index": key[1], "own": False, "why": why})
            else:
                todo.append((key, image))
        if todo:
            self._regenerate(todo)

    def _regenerate(self, todo: list[tuple[Key, Any]]) -> None:
        from generation.work import image_seed

        prompts = [self.prompts[key[0]] for key, _ in todo]
        made = [g.image for g in self.generator([p.prompt for p in prompts], [image_seed(*key) for key, _ in todo])]
        scored: list[ResultRecord | None] = [None] * len(todo)
        if self.score is not None:
            scored = list(self.score(made, prompts, self.split, [key[1] for key, _ in todo]))
        for (key, image), generated, record in zip(todo, made, scored, strict=True):
            measured = own_image(image, generated, self.plan.threshold)
            toward, against = verdict_moves(self.submitted[key], record) if record is not None else (0, 0)
            self.kept.add(
                {
                    "prompt_id": key[0],
                    "sample_index": key[1],
                    "similarity": math.floor(100 * measured.within) / 100,
                    "difference": round(measured.difference, 3),
                    "median": round(measured.median, 3),
                    "region": [round(value, 4) for value in measured.region],
                    "flip": (toward > against) - (toward < against),
                    "moved": toward + against if record is not None else -1,  # -1: not scored
                    "own": measured.own,
                    "why": "" if measured.own else not_own_why(measured, self.plan.threshold),
                    "regenerated_jpeg": thumbnail(generated),
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


def pair_records(compared: Sequence[dict[str, Any]], thumbnails: dict[Key, str], shown: int = SHOWN_PAIRS) -> list:
    """Every compared pair, for the entry's record.

    Args:
        compared: the kept pairs (`Comparer.compared`).
        thumbnails: the submitted images' JPEGs read in this run (a pair kept from an earlier job has its own).
        shown: how many keep their JPEGs.

    Returns:
        `RegeneratedPair`s: those not the model's own first (largest difference first), then those whose
        verdicts moved toward the submission; the first SHOWN with both images.
    """

    def order(kept: dict[str, Any]) -> tuple:
        return (kept["own"], -(kept.get("flip", 0) > 0), -(kept.get("difference") or math.inf))

    pairs = []
    for position, kept in enumerate(sorted(compared, key=order)):
        fields = {name: kept[name] for name in RegeneratedPair.model_fields if name in kept}
        key = (kept["prompt_id"], kept["sample_index"])
        with_images = position < shown
        fields["submitted_jpeg"] = (thumbnails.get(key) or kept.get("submitted_jpeg", "")) if with_images else ""
        fields["regenerated_jpeg"] = kept.get("regenerated_jpeg", "") if with_images else ""
        pairs.append(RegeneratedPair(**fields))
    return pairs
