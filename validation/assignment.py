"""Which image an annotator gets next (pure; the Annotate tab calls it with the store's records).

Each image of the sample goes to `per_image` (3) distinct annotators. An annotator is given the
first image, in sample order, that they have not annotated and that still lacks annotators, so
they resume where they left off, and several annotators working at once fill images in the same
order (each image completes quickly). Images other annotators have open right now can be passed
as `reserved` so they count towards the three. `history` lists the images the annotator has done,
in sample order, so the tab can go back and change an answer.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .annotations import AnnotationRecord, ImageKey
from .labels import RATERS
from .sample import SampleItem


@dataclass(frozen=True)
class Progress:
    """Counts for the progress line: "12 done, 188 left for you; 40 of 600 images complete"."""

    done: int  # sample images this annotator has annotated
    left: int  # sample images still open to them (not done by them, fewer than `per_image` annotators)
    complete: int  # sample images with `per_image` annotators or more
    total: int  # images in the sample


@dataclass(frozen=True)
class Assignment:
    item: SampleItem | None  # the next image; None when nothing is left for this annotator
    position: int | None  # its index in the sample
    history: tuple[ImageKey, ...]
    progress: Progress


def annotators_by_image(records: Iterable[AnnotationRecord]) -> dict[ImageKey, set[str]]:
    """{image: annotators who answered it}."""
    by_image: dict[ImageKey, set[str]] = defaultdict(set)
    for record in records:
        by_image[record.image_key].add(record.annotator)
    return dict(by_image)


def next_image(
    *,
    sample: Sequence[SampleItem],
    annotations: Iterable[AnnotationRecord],
    annotator: str,
    per_image: int = RATERS,
    reserved: Mapping[ImageKey, Collection[str]] | None = None,
) -> Assignment:
    """The next image for `annotator`, what they have done, and the progress counts.

    >>> from validation.sample import SampleItem
    >>> sample = [SampleItem(prompt_id=f"color_pos1_neg0_{k:03d}", model_key="m", sample_index=0,
    ...           category="color", setting="pos1_neg0") for k in range(3)]
    >>> done = [AnnotationRecord(prompt_id="color_pos1_neg0_000", model_key="m", sample_index=0,
    ...         annotator="ann", objects={}, statements={})]
    >>> a = next_image(sample=sample, annotations=done, annotator="ann")
    >>> a.position, a.progress
    (1, Progress(done=1, left=2, complete=0, total=3))
    """
    name = annotator.strip()
    stored = annotators_by_image(annotations)
    taken = {key: set(holders) for key, holders in stored.items()}
    for key, holders in (reserved or {}).items():
        taken.setdefault(key, set()).update(h for h in holders if h != name)
    history, open_positions, complete = [], [], 0
    for position, item in enumerate(sample):
        holders = taken.get(item.image_key, set())
        if name in holders:
            history.append(item.image_key)
        elif len(holders) < per_image:
            open_positions.append(position)
        complete += len(stored.get(item.image_key, ())) >= per_image
    first = open_positions[0] if open_positions else None
    progress = Progress(done=len(history), left=len(open_positions), complete=complete, total=len(sample))
    return Assignment(
        item=sample[first] if first is not None else None,
        position=first,
        history=tuple(history),
        progress=progress,
    )
