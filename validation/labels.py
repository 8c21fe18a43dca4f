"""Human labels per image: three annotators' records → majority label and continuous score.

docs/validation.md: the **majority label** of an image is "passed by at least 2 of its 3 annotators";
the **continuous human score** is the mean over its annotators of the share of the image's
elements (objects + statements) each found satisfied.

Images annotated by fewer than three people get no label: they are listed in
`LabelSet.under_annotated`, never mixed in. When more than three people annotated an image, the
three earliest records (by ``created_at``) are used and the rest counted in `extra_ignored`.
An image's raters are ordered by annotator name ("slots"): when the same people annotate every
image, slot statistics such as pairwise κ are per person.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from dataset_builder.records import PromptRecord
from negt2ibench.core.errors import UserError

from .annotations import (
    AnnotationError,
    AnnotationRecord,
    ImageKey,
    check_against_prompt,
    element_verdicts,
)

RATERS = 3
ElementBlock = Literal["object", "positive", "negated"]


def element_blocks(prompt: PromptRecord) -> tuple[ElementBlock, ...]:
    """The kind of each element, in `element_verdicts` order: objects, then statements by polarity."""
    statements = sorted(prompt.statements, key=lambda s: s.index)
    blocks: list[ElementBlock] = ["object"] * len(prompt.objects)
    blocks.extend(s.polarity for s in statements)
    return tuple(blocks)


@dataclass(frozen=True)
class ImageLabels:
    """The annotations of one image, one row per rater (slot), raters sorted by name."""

    key: ImageKey
    prompt: PromptRecord
    annotators: tuple[str, ...]
    elements: tuple[tuple[bool, ...], ...]  # [rater][element] satisfied, in `element_verdicts` order
    blocks: tuple[ElementBlock, ...]  # per element

    @property
    def passes(self) -> tuple[bool, ...]:
        """Whether each rater passes the image (every element satisfied)."""
        return tuple(all(row) for row in self.elements)

    @property
    def scores(self) -> tuple[float, ...]:
        """Each rater's share of satisfied elements."""
        return tuple(sum(row) / len(row) for row in self.elements)

    @property
    def majority(self) -> bool:
        """The majority label: passed by more than half of the raters (2 of 3)."""
        return 2 * sum(self.passes) > len(self.passes)

    @property
    def score(self) -> float:
        """The continuous human score: the mean of the raters' scores.

        Computed as one division (satisfied over raters × elements), so equal scores are equal
        floats and tie exactly in the rank statistics."""
        return sum(sum(row) for row in self.elements) / (len(self.elements) * len(self.blocks))

    @property
    def element_majority(self) -> tuple[bool, ...]:
        """Per element: satisfied for more than half of the raters."""
        return tuple(2 * sum(column) > len(column) for column in zip(*self.elements, strict=True))


@dataclass
class LabelSet:
    """Labelled images plus what could not be labelled."""

    labels: dict[ImageKey, ImageLabels] = field(default_factory=dict)
    under_annotated: dict[ImageKey, int] = field(default_factory=dict)  # image → annotators it has
    extra_ignored: int = 0  # records beyond the first three of an image
    annotators: tuple[str, ...] = ()
    records: int = 0

    def require_labels(self, source: str = "") -> None:
        """A `UserError` when no image has three annotators (nothing to compare), naming SOURCE."""
        if not self.labels:
            where = f"{source}: " if source else ""
            raise UserError(f"{where}no image has three annotators yet ({len(self.under_annotated)} have fewer)")

    def coverage(self) -> dict[str, int]:
        return {
            "annotation_records": self.records,
            "annotators": len(self.annotators),
            "labelled_images": len(self.labels),
            "under_annotated_images": len(self.under_annotated),
            "extra_annotations_ignored": self.extra_ignored,
        }


def build_labels(
    records: Iterable[AnnotationRecord], prompts: Mapping[str, PromptRecord], *, raters: int = RATERS
) -> LabelSet:
    """Group records by image, check each against its prompt, and label the images with `raters` annotators.

    Raises `AnnotationError` for an unknown prompt id, a record that does not match its prompt
    (another corpus version), or two records of one annotator on one image.
    """
    by_image: dict[ImageKey, dict[str, AnnotationRecord]] = defaultdict(dict)
    count = 0
    for record in records:
        count += 1
        if record.prompt_id not in prompts:
            raise AnnotationError(
                f"annotation of unknown prompt id {record.prompt_id!r} (by {record.annotator!r}): "
                "the annotations and the prompts are of different corpora (pass --prompts)"
            )
        check_against_prompt(record, prompts[record.prompt_id])
        if record.annotator in by_image[record.image_key]:
            raise AnnotationError(
                f"duplicate annotator lines: {record.annotator!r} annotated "
                f"{record.model_key}/{record.prompt_id}#{record.sample_index} twice"
            )
        by_image[record.image_key][record.annotator] = record
    result = LabelSet(records=count)
    names: set[str] = set()
    for key in sorted(by_image):
        chosen = sorted(by_image[key].values(), key=lambda r: (r.created_at, r.annotator))
        names.update(by_image[key])
        if len(chosen) < raters:
            result.under_annotated[key] = len(chosen)
            continue
        result.extra_ignored += len(chosen) - raters
        chosen = sorted(chosen[:raters], key=lambda r: r.annotator)
        prompt = prompts[key[1]]
        result.labels[key] = ImageLabels(
            key=key,
            prompt=prompt,
            annotators=tuple(r.annotator for r in chosen),
            elements=tuple(tuple(element_verdicts(r, prompt)) for r in chosen),
            blocks=element_blocks(prompt),
        )
    result.annotators = tuple(sorted(names))
    return result
