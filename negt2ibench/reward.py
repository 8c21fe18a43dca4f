"""NegT2IBench and GenEval as a training reward, in process: the dict `negt2ibench reward serve` answers.

    >>> from negt2ibench.reward import Reward
    >>> reward = Reward(("geneval", "negation"), device="auto")  # models load once, on the first call
    >>> out = reward(images, metadatas, only_strict=False)         # doctest: +SKIP
    >>> out["scores"], out["strict_rewards"], out["group_strict_rewards"]["colors"]  # doctest: +SKIP

`images`: a float tensor N×C×H×W in [0, 1] (as Flow-GRPO passes them), a uint8 N×H×W×C array, or a
list of PIL images, uint8 arrays or encoded bytes. `metadatas`, one per image, chooses the reward:

- GenEval's metadata (a dict with `tag` and `include`, a line of its `evaluation_metadata.jsonl`):
  reward-server's reward on this project's GenEval mode (`evaluator.geneval.geneval_reward`):
  `scores` its partial credit, `strict_rewards` its exact-count verdict, `rewards` GenEval's own
  verdict (`geneval_verdict`);
- NegT2IBench's: a prompt record (or its dict, a line of `prompts.jsonl`), a prompt id, or a text the
  grammar parses (a dict `{"prompt": text}` too): `scores` the share of satisfied elements (objects
  present + statements satisfied, the human score of docs/validation.md), `strict_rewards` and
  `rewards` whether the image passes. A blank image scores 0: a negated statement holds only with
  its objects present, so drawing nothing satisfies nothing.

As reward-server: `rewards` is 0.0 for every image when `only_strict`, and the group dicts (keyed by
GenEval's six tasks, NegT2IBench's six categories, or both, as the reward was built) hold an image's
value under its own key and -10.0 under every other. With NegT2IBench images the dict also has
`details`: per image its prompt and each statement's verdict and cause (None for a GenEval image).
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_builder.records import PromptIndex, PromptRecord
from dataset_builder.vocabulary import CATEGORIES
from evaluator.geneval.prompts import TASKS, GenEvalPrompt, metadata_problem
from negt2ibench.core.errors import MissingWeightsError, UsageError, UserError

from .api import Evaluator, resolve_prompt
from .geneval_api import GenEvalEvaluator
from .inputs import rgb_image

if TYPE_CHECKING:
    from PIL import Image

    from evaluator.results import ResultRecord

GENEVAL, NEGATION = "geneval", "negation"
REWARD_KINDS: tuple[str, ...] = (GENEVAL, NEGATION)
GROUPS: dict[str, tuple[str, ...]] = {GENEVAL: TASKS, NEGATION: CATEGORIES}
OTHER_GROUP = -10.0  # reward-server's marker for "this image is not of this group" (gen_eval.py:335-336)
RESPONSE_KEYS: tuple[str, ...] = ("scores", "rewards", "strict_rewards", "group_rewards", "group_strict_rewards")
DEFAULT_BATCH_PIXELS = 2**24  # 64 images of 512 × 512 px: Flow-GRPO's batch (flow_grpo/rewards.py:168) at SD3.5's size


class RewardError(UserError):
    """A batch the reward cannot score: one line. The server answers its two kinds apart."""


class RewardInputError(RewardError):
    """What the caller sent cannot be scored (bad metadata, an unreadable image, a batch of the wrong
    shape): the server answers 400, and sending it again cannot help."""


class RewardFault(RewardError):
    """The scorer failed on an image it was given (an error row: a model or rule that raised): the
    server answers 500, as for any fault of its own (out of memory, a model error)."""


@dataclass(frozen=True)
class ImageReward:
    """One image's reward: its kind, its group (GenEval task or NegT2IBench category), the partial
    `score`, `strict`, `correct` (what `rewards` reports) and, for NegT2IBench, `details`."""

    kind: str
    group: str
    score: float
    strict: bool
    correct: bool
    details: dict[str, Any] | None = None


class Reward:
    """The rewards of one process: GenEval's (`geneval`), NegT2IBench's (`negation`) or both, each
    with its models loaded once.

    Args:
        rewards: which metadata it scores; metadata of another kind is refused with a `RewardError`.
        geneval_preset: GenEval's preset (`geneval`: Mask2Former + CLIP, as reward-server's models).
        geneval_options: GenEval's `--options` (`{"model": DIR, "clip_model": DIR}` for other weights).
        negation_preset: the scorer's preset (`current`).
        device, weights_dir: as `Evaluator`'s.
        prompts: where NegT2IBench prompt ids are looked up (default: the 4,800 test prompts; a
            training folder of `negt2ibench build --split train` for its ids).
        batch_size: images per model batch.
        batch_pixels: pixels per model batch: a batch of larger images holds fewer of them, so the
            models' working memory stays that of Flow-GRPO's 64 images of 512 × 512 px whatever the
            images' size (the default, 2**24).
        geneval_perception, negation_perception: models to use instead of the real ones (tests).
    """

    def __init__(
        self,
        rewards: Sequence[str] = (GENEVAL,),
        *,
        geneval_preset: str = "geneval",
        geneval_options: Mapping[str, str] | None = None,
        negation_preset: str = "current",
        device: str = "auto",
        weights_dir: str | Path | None = None,
        prompts: str | Path | PromptIndex | None = None,
        batch_size: int = 64,
        batch_pixels: int = DEFAULT_BATCH_PIXELS,
        geneval_perception: Any = None,
        negation_perception: Any = None,
    ):
        kinds = tuple(dict.fromkeys(rewards))
        unknown = [kind for kind in kinds if kind not in REWARD_KINDS]
        if not kinds or unknown:
            raise UsageError(f"rewards are {', '.join(REWARD_KINDS)}; got {', '.join(map(repr, kinds)) or 'none'}")
        self.kinds = kinds
        self.geneval: GenEvalEvaluator | None = None
        self.negation: Evaluator | None = None
        if GENEVAL in kinds:
            geneval_models: dict[str, Any] = (
                {"perception": geneval_perception}
                if geneval_perception is not None
                else {"device": device, "weights_dir": weights_dir}
            )
            self.geneval = GenEvalEvaluator(
                geneval_preset, options=geneval_options, batch_size=batch_size, **geneval_models
            )
        if NEGATION in kinds:
            negation_models: dict[str, Any] = (
                {"perception": negation_perception}
                if negation_perception is not None
                else {"device": device, "weights_dir": weights_dir}
            )
            self.negation = Evaluator(negation_preset, batch_size=batch_size, prompts=prompts, **negation_models)
        self.batch_size = batch_size
        self.batch_pixels = batch_pixels
        self._lock = threading.Lock()  # one batch at a time on these models

    def __repr__(self) -> str:
        return f"Reward(rewards={self.kinds!r})"

    def require_weights(self) -> None:
        """A look at the disk for every model these rewards need. No model, no torch.

        Raises:
            MissingWeightsError: one line naming every missing weight of every reward and the
                `download-models` commands that fetch them.
            MissingLibraryError: torch or transformers is not installed.
        """
        missing: list[tuple[str, MissingWeightsError]] = []
        for kind, evaluator in ((GENEVAL, self.geneval), (NEGATION, self.negation)):
            try:
                if evaluator is not None:
                    evaluator.require_weights()
            except MissingWeightsError as error:
                missing.append((kind, error))
        if len(missing) == 1:
            raise missing[0][1]
        if missing:  # both rewards: one line that names them all, not the first reward's only
            models = " and ".join(f"{error.model} ({kind})" for kind, error in missing)
            how = " ".join(f"{kind}: {error.how_to_get}" for kind, error in missing)
            raise MissingWeightsError(models, how_to_get=how)

    def load(self) -> Reward:
        """Load every model now (the server does, before it answers).

        Returns:
            This reward, loaded.
        """
        if self.geneval is not None:
            self.geneval.load()
        if self.negation is not None:
            self.negation.load()
            import evaluator.pipeline  # noqa: F401 - the engine (and torch): imported now, not by the first batch
        return self

    def __call__(self, images: Any, metadatas: Sequence[Any], only_strict: bool = False) -> dict[str, Any]:
        """The reward dict of a batch (see the module's docstring), as `score` reads it.

        Args:
            images: the batch.
            metadatas: one per image.
            only_strict: reward-server's.

        Returns:
            reward-server's five keys, and `details` when NegT2IBench images are among them.
        """
        return reward_response(self.score(images, metadatas, only_strict=only_strict), self.kinds)

    def score(self, images: Any, metadatas: Sequence[Any], *, only_strict: bool = False) -> list[ImageReward]:
        """One `ImageReward` per image, in order.

        Args:
            images: the batch, in any form `as_images` takes.
            metadatas: one metadata per image (see the module's docstring).
            only_strict: as reward-server's: `correct` is False for every image.

        Returns:
            The images' rewards, in order.

        Raises:
            RewardInputError: the images or the metadata cannot be scored (the message names which).
            RewardFault: the scorer failed on an image (an error row).
        """
        if isinstance(metadatas, (str, bytes, Mapping)) or not hasattr(metadatas, "__len__"):
            raise RewardInputError("give one metadata per image, as a list")
        metadatas = list(metadatas)
        kinds = [self._kind_of(metadata, i) for i, metadata in enumerate(metadatas)]
        with self._lock:  # decoded under the lock: requests waiting for the models hold their bytes only
            pictures = as_images(images)
            if len(pictures) != len(metadatas):
                raise RewardInputError(f"{len(pictures)} images but {len(metadatas)} metadata: give one per image")
            found: list[ImageReward | None] = [None] * len(pictures)
            for kind, score in ((GENEVAL, self._geneval), (NEGATION, self._negation)):
                chosen = [i for i, k in enumerate(kinds) if k == kind]
                for batch in pixel_batches([pictures[i] for i in chosen], self.batch_size, self.batch_pixels):
                    where = [chosen[i] for i in batch]
                    rewards = score([pictures[i] for i in where], [metadatas[i] for i in where], where, only_strict)
                    for i, reward in zip(where, rewards, strict=True):
                        found[i] = reward
        return [reward for reward in found if reward is not None]

    # -- the two rewards ---------------------------------------------------------------------------
    def _kind_of(self, metadata: Any, index: int) -> str:
        kind = GENEVAL if isinstance(metadata, Mapping) and "tag" in metadata else NEGATION
        if kind not in self.kinds:
            what = "GenEval metadata" if kind == GENEVAL else "NegT2IBench metadata"
            raise RewardInputError(
                f"meta_datas[{index}] is {what}, but this reward scores {' and '.join(self.kinds)} only"
            )
        return kind

    def _geneval(
        self, images: list[Image.Image], metadatas: list[Any], where: list[int], only_strict: bool
    ) -> list[ImageReward]:
        from evaluator.geneval.rules import geneval_reward, geneval_verdict

        assert self.geneval is not None
        prompts = []
        for metadata, index in zip(metadatas, where, strict=True):
            problem = metadata_problem(metadata)
            if problem:
                raise RewardInputError(f"meta_datas[{index}] is not GenEval metadata: {problem}")
            prompts.append(GenEvalPrompt(-1, dict(metadata)))
        self.geneval.load()
        config, rewards = self.geneval.config, []
        observed = self.geneval.perception.observe(images, prompts)  # one batch: `score` made it
        for index, prompt, detections in zip(where, prompts, observed, strict=True):
            try:
                reward = geneval_reward(prompt.metadata, detections, config)
                correct = not only_strict and geneval_verdict(prompt.metadata, detections, config).correct
            except ValueError as error:
                raise RewardInputError(f"meta_datas[{index}]: {error}") from None
            rewards.append(ImageReward(GENEVAL, prompt.tag, reward.score, reward.strict, correct))
        return rewards

    def _negation(
        self, images: list[Image.Image], metadatas: list[Any], where: list[int], only_strict: bool
    ) -> list[ImageReward]:
        assert self.negation is not None
        prompts = [self._prompt(metadata, index) for metadata, index in zip(metadatas, where, strict=True)]
        self.negation.load(prompts)
        records = self.negation.score_many(
            images, prompts, model_key="reward", batch_size=len(images), progress=False, num_workers=0
        )
        rewards = []
        for index, prompt, record in zip(where, prompts, records, strict=True):
            if record.error or record.score is None:  # an error row is never a score: the batch fails
                raise RewardFault(f"images[{index}] could not be scored: {record.error}")
            correct = record.passed and not only_strict
            details = negation_details(prompt, record)
            rewards.append(ImageReward(NEGATION, prompt.category, record.score, record.passed, correct, details))
        return rewards

    def _prompt(self, metadata: Any, index: int) -> PromptRecord:
        """A prompt record from a record, its dict, a dict with a `prompt_id` or a `prompt`, or a text."""
        assert self.negation is not None
        try:
            if isinstance(metadata, Mapping):
                if "statements" in metadata:
                    return PromptRecord.model_validate(dict(metadata))
                prompt_id, text = metadata.get("prompt_id"), metadata.get("prompt")
                known = isinstance(prompt_id, str) and prompt_id in self.negation.prompts
                metadata = prompt_id if known or (prompt_id is not None and text is None) else text
            if isinstance(metadata, (str, PromptRecord)):
                return resolve_prompt(metadata, self.negation.prompts)
        except UserError as error:
            raise RewardInputError(f"meta_datas[{index}]: {error.one_line()}") from None
        except ValueError as error:  # pydantic's ValidationError of a malformed record
            first = str(error).strip().splitlines()[0]
            raise RewardInputError(f"meta_datas[{index}] is not a prompt record: {first}") from None
        raise RewardInputError(
            f"meta_datas[{index}] must be GenEval metadata, a prompt record, a prompt id or a text in the grammar"
        )


def negation_details(prompt: PromptRecord, record: ResultRecord) -> dict[str, Any]:
    """What a training log keeps of one NegT2IBench verdict.

    Args:
        prompt: the image's prompt.
        record: its verdict.

    Returns:
        The prompt, each object's presence and each statement's text, polarity, verdict and cause.
    """
    texts = {statement.index: statement.text for statement in prompt.statements}
    return {
        "prompt_id": prompt.prompt_id,
        "prompt": prompt.prompt,
        "category": prompt.category,
        "passed": record.passed,
        "score": record.score,
        "objects": [{"name": obj.name, "present": obj.present} for obj in record.objects],
        "statements": [
            {
                "index": s.index,
                "text": texts.get(s.index, ""),
                "polarity": s.polarity,
                "satisfied": s.satisfied,
                "cause": s.cause,
            }
            for s in record.statements
        ],
    }


def reward_response(rewards: Sequence[ImageReward], kinds: Sequence[str] = (GENEVAL,)) -> dict[str, Any]:
    """reward-server's response (gen_eval.py:320-340).

    Args:
        rewards: the images' rewards, in order.
        kinds: the rewards served: their groups key the group dicts, in every answer.

    Returns:
        Per image `scores`, `rewards` (1.0/0.0), `strict_rewards` (1.0/0.0); the group dicts, an image's
        value under its group and -10.0 under every other; `details` when a NegT2IBench image is there.
    """
    keys = [group for kind in kinds for group in GROUPS[kind]]
    grouped_rewards: dict[str, list[float]] = defaultdict(list)
    grouped_strict: dict[str, list[float]] = defaultdict(list)
    for reward in rewards:
        for key in keys:
            own = key == reward.group
            grouped_rewards[key].append((1.0 if reward.correct else 0.0) if own else OTHER_GROUP)
            grouped_strict[key].append((1.0 if reward.strict else 0.0) if own else OTHER_GROUP)
    response: dict[str, Any] = {
        "scores": [reward.score for reward in rewards],
        "rewards": [1.0 if reward.correct else 0.0 for reward in rewards],
        "strict_rewards": [1.0 if reward.strict else 0.0 for reward in rewards],
        "group_rewards": dict(grouped_rewards),
        "group_strict_rewards": dict(grouped_strict),
    }
    if any(reward.kind == NEGATION for reward in rewards):
        response["details"] = [reward.details for reward in rewards]
    return response


def pixel_batches(pictures: Sequence[Image.Image], batch_size: int, max_pixels: int) -> list[list[int]]:
    """Consecutive batches of indices into PICTURES: at most `batch_size` images and `max_pixels`
    pixels each (an image over `max_pixels` alone), so a model batch's memory is bounded by its pixels.

    Args:
        pictures: the decoded images, in order.
        batch_size: the most images in a batch.
        max_pixels: the most pixels in a batch of more than one image.

    Returns:
        The batches, each a list of indices, covering every picture once, in order.
    """
    batches: list[list[int]] = []
    batch: list[int] = []
    pixels = 0
    for index, picture in enumerate(pictures):
        size = picture.width * picture.height
        if batch and (len(batch) == batch_size or pixels + size > max_pixels):
            batches.append(batch)
            batch, pixels = [], 0
        batch.append(index)
        pixels += size
    if batch:
        batches.append(batch)
    return batches


def as_images(images: Any) -> list[Image.Image]:
    """8-bit RGB images from a batch.

    Args:
        images: a torch tensor N×C×H×W (float in [0, 1], converted as Flow-GRPO converts it: ×255,
            rounded, clamped; or uint8), a numpy array N×H×W×C, or a sequence of PIL images, arrays or
            encoded bytes.

    Returns:
        The images.

    Raises:
        RewardInputError: what cannot be an image, named.
    """
    if type(images).__module__.split(".")[0] == "torch":
        images = _tensor_to_array(images)
    import numpy as np

    if isinstance(images, np.ndarray):
        if images.ndim != 4:
            raise RewardInputError(f"an image batch array is N×H×W×C, got shape {images.shape}")
        images = list(images)
    if isinstance(images, (str, bytes, Mapping)) or not isinstance(images, Sequence):
        raise RewardInputError(f"images must be a batch (a tensor, an array or a list), got {type(images).__name__}")
    try:
        return [rgb_image(image, f"images[{i}]") for i, image in enumerate(images)]
    except (UserError, TypeError) as error:
        raise RewardInputError(str(error)) from None


def _tensor_to_array(tensor: Any) -> Any:
    import torch

    if tensor.ndim != 4:
        raise RewardInputError(f"an image tensor is N×C×H×W, got shape {tuple(tensor.shape)}")
    if tensor.is_floating_point():
        low, high = (float(tensor.min()), float(tensor.max())) if tensor.numel() else (0.0, 0.0)
        if not (-1e-3 <= low and high <= 1 + 1e-3):  # Flow-GRPO clamps; a [0, 255] tensor would be all white
            raise RewardInputError(f"a float image tensor holds values in [0, 1], got {low:.3g} … {high:.3g}")
        tensor = (tensor * 255).round().clamp(0, 255).to(torch.uint8)  # flow_grpo/rewards.py:177
    elif tensor.dtype != torch.uint8:
        raise RewardInputError(f"an image tensor is float in [0, 1] or uint8, got {tensor.dtype}")
    return tensor.cpu().numpy().transpose(0, 2, 3, 1)  # NCHW -> NHWC
