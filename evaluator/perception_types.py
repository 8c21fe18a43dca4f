"""What scoring asks of perception, as Protocols: `evaluator.perception.ModelPerception` is the real
one, and any object with `observe` scores too (a test double, a user's own models). No model or
torch import here, so the API can check what it was given without loading them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from dataset_builder.records import PromptRecord
    from evaluator.models.inputs import Frame, InputPreparer, PreparedImage
    from evaluator.observation import ImageObservation

MaskChoice = Literal["all", "rules"]
MASKS: tuple[MaskChoice, ...] = ("all", "rules")  # observe(masks=...): every present object's mask, or a rule's


@runtime_checkable
class Perception(Protocol):
    """What scoring needs of perception: any object with this `observe` scores images (the Space, the
    API, `score_images`), e.g. a test double or a user's own models."""

    def observe(self, images: Sequence[Frame], prompts: Sequence[PromptRecord]) -> list[ImageObservation]:
        """One observation per (image, prompt) pair, in order."""
        ...


@runtime_checkable
class StreamingPerception(Perception, Protocol):
    """A perception whose inputs the scoring loop's workers make (`ModelPerception`): the loop hands
    it those inputs and asks only for the masks a rule reads (`evaluator.pipeline.scoring_step`)."""

    def observe(
        self,
        images: Sequence[Frame],
        prompts: Sequence[PromptRecord],
        *,
        prepared: Sequence[PreparedImage | None] | None = None,
        masks: MaskChoice = "all",
    ) -> list[ImageObservation]:
        """One observation per (image, prompt) pair; `prepared`: the models' inputs per image (None
        where missing), `masks="rules"`: only the masks a rule reads."""
        ...

    def worker_preparer(self, categories: Iterable[str]) -> InputPreparer | None:
        """What makes the models' inputs in the loader's worker processes (None: made in `observe`)."""
        ...


@runtime_checkable
class LoadablePerception(Perception, Protocol):
    """A perception whose models can be loaded ahead of the first image (`Evaluator.load`)."""

    def load_all(self, prompts: Sequence[PromptRecord] = ()) -> None:
        """Load every model these prompts (all, when none given) need."""
        ...
