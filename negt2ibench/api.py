"""The public Python API: score images from a notebook or a script exactly as `negt2ibench score` does.

    >>> from negt2ibench import Evaluator
    >>> ev = Evaluator(preset="current", device="auto")  # models load lazily, on the first score
    >>> out = ev.score("cup.png", "color_pos0_neg1_004")  # doctest: +SKIP
    >>> out.record.passed, [s.cause for s in out.record.statements]  # doctest: +SKIP

`Evaluator` holds one configuration (a preset of `evaluator.config.PRESETS`) and the perception
built from it, so the models and the rules never work from different constants. The CLI's
`score` and `explain` and the Space are thin shells over it. Importing this module loads no
model and no torch; `Evaluator(...)` checks the device, and the models load on the first score
(or on `load()`). Weights are read from this machine only: before any model (or torch) loads, the
files the prompts need are looked for on disk, and a missing one fails at once with a
`MissingWeightsError` naming the `negt2ibench download-models` command that fetches it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import EvaluatorConfig
from evaluator.observation import ImageObservation
from evaluator.perception_types import LoadablePerception, Perception
from evaluator.results import ResultRecord
from negt2ibench.core.errors import UserError

from .inputs import (
    batches,
    check_model_key,
    config_of,
    fetcher,
    non_negative,
    positive,
    prompt_index,
    resolve_prompt,
    rgb_image,
    running_counts,
)

if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

    from evaluator.pipeline import ScoreSummary
    from evaluator.sources import ImageItem

    ImageLike = Image.Image | str | Path | bytes | np.ndarray


@dataclass(frozen=True)
class ScoreOutput:
    """What `Evaluator.score` returns for one image.

    Attributes:
        record: the verdict, exactly the record `negt2ibench score` writes for this image
            (objects found, each statement's verdict and failure cause, provenance).
        observation: what the models saw (boxes, masks, attribute scores, disparity), e.g. for
            `evaluator.annotate.annotate(image, out.observation, out.record)`.
    """

    record: ResultRecord
    observation: ImageObservation


class Evaluator:
    """The detector-based scorer of one preset: prompts in, verdicts out.

    Args:
        preset: a preset name (`current`, the paper's Table 15; `previous`, Table 16's relation
            rules; `no_sam`, RF-DETR's own masks; `c1` … `c8`, Table 17's ablation, Mask R-CNN
            in c1–c4) or an `EvaluatorConfig` (`evaluator.config.PRESETS`).
        device: where the models run: `auto` (cuda, then mps, then cpu), `cpu`, `cuda`,
            `cuda:N` or `mps`. Checked now; a device that is not there is a `UserError`.
        weights_dir: the folder `negt2ibench download-models --dir DIR` filled (default: the
            Hugging Face cache and `$RF_HOME`).
        batch_size: images per model batch (default 8; `score_many` may pass fewer at a time).
        perception: an object with `observe(images, prompts)` to use instead of the real models
            (tests pass tiny random models or a double). Its `config`, when it has one, must be
            this preset's; `device` and `weights_dir` then do not apply.
        prompts: where prompt ids are looked up: a dataset folder, `prompts.jsonl` or parquet
            file, records, or None for the built-in 4,800 prompts (read on first use).

    Example:
        >>> ev = Evaluator("no_sam", device="cpu")
        >>> ev.config.use_sam
        False
    """

    def __init__(
        self,
        preset: str | EvaluatorConfig = "current",
        *,
        device: str = "auto",
        weights_dir: str | Path | None = None,
        batch_size: int = 8,
        perception: Perception | None = None,
        prompts: str | Path | Iterable[PromptRecord] | PromptIndex | None = None,
    ):
        self.config = config_of(preset)
        self.batch_size = positive("batch_size", batch_size)
        if not isinstance(device, str):
            raise TypeError(f"device must be a string such as 'auto', 'cpu' or 'cuda:0', got {type(device).__name__}")
        if perception is not None:
            if device != "auto" or weights_dir is not None:
                raise UserError("pass either perception or device/weights_dir: a given perception has its own")
            if not isinstance(perception, Perception):
                raise TypeError("perception must have an observe(images, prompts) method (evaluator.perception)")
            own = getattr(perception, "config", None)
            if isinstance(own, EvaluatorConfig) and own.config_hash != self.config.config_hash:
                raise UserError(
                    f"perception was built for config {own.name!r} ({own.config_hash}) but the evaluator uses "
                    f"{self.config.name!r} ({self.config.config_hash}): pass preset=perception.config"
                )
        else:
            from negt2ibench.core.launch import check_device

            check_device(device)  # an unknown or absent device fails here, before any model loads
        self.device = device
        self.weights_dir = weights_dir
        self._perception = perception
        self._prompt_source = prompts
        self._index: PromptIndex | None = prompts if isinstance(prompts, PromptIndex) else None
        self._lock = threading.RLock()  # the Space scores from several threads

    def __repr__(self) -> str:
        models = "loaded lazily" if self._perception is None else type(self._perception).__name__
        return f"Evaluator(preset={self.config.name!r}, config_hash={self.config.config_hash!r}, perception={models})"

    # -- what it holds ---------------------------------------------------------------------------
    @property
    def perception(self) -> Perception:
        """The models (`evaluator.perception.ModelPerception` unless one was given), created on first use."""
        with self._lock:
            if self._perception is None:
                from evaluator import perception as perception_module

                self._perception = perception_module.ModelPerception(
                    self.config, device=self.device, batch_size=self.batch_size, weights_dir=self.weights_dir
                )
            return self._perception

    @property
    def prompts(self) -> PromptIndex:
        """The prompt records that ids are looked up in, read on first use."""
        with self._lock:
            if self._index is None:
                self._index = prompt_index(self._prompt_source)
            return self._index

    def prompt(self, prompt: str | PromptRecord) -> PromptRecord:
        """A prompt record from a record, a prompt id, or a text in the grammar (`resolve_prompt`).

        Args:
            prompt: a prompt record, a prompt id, or a text in the grammar.

        Returns:
            The prompt's record (a benchmark prompt's text gives that prompt's, any other text `custom`).

        Raises:
            TypeError: `prompt` is neither a string nor a `PromptRecord`.
            UserError: an unknown prompt id or a text outside the grammar (the message says why).
        """
        return resolve_prompt(prompt, self.prompts)

    def require_weights(self, prompts: Iterable[str | PromptRecord] = ()) -> None:
        """Check that the weights of the models these prompts need are on this machine (a disk look).

        No model, no torch, no network; every scoring call makes it first; a given `perception` has
        nothing to look for.

        Args:
            prompts: prompts (records, ids or texts) whose categories name the models; none: every model.

        Raises:
            MissingLibraryError: torch or transformers is not installed (what to install comes first).
            MissingWeightsError: a needed weight is absent, naming the `download-models` command to run.
            UserError: a prompt that `prompt` refuses.
        """
        if self._perception is not None:
            return
        from evaluator.models.weights import require_weights, scorer_roles
        from negt2ibench.core.local_files import require_modules

        require_modules("torch", "transformers")  # what to install comes before what to download
        categories = {self.prompt(prompt).category for prompt in prompts}
        require_weights(self.config, self.weights_dir, scorer_roles(self.config, categories))

    def load(self, prompts: Iterable[str | PromptRecord] = ()) -> Evaluator:
        """Load every model these prompts need now, not on the first score.

        Args:
            prompts: prompts (records, ids or texts) whose categories name the models; none: all four.

        Returns:
            This evaluator, loaded (so `Evaluator().load()` chains).

        Raises:
            MissingLibraryError: torch or transformers is not installed.
            MissingWeightsError: a needed weight is absent, saying how to get it.
            UserError: a prompt that `prompt` refuses.
        """
        records = [self.prompt(prompt) for prompt in prompts]
        self.require_weights(records)
        perception = self.perception
        if isinstance(perception, LoadablePerception):  # a test double may have nothing to load
            perception.load_all(records)
        return self

    # -- scoring ---------------------------------------------------------------------------------
    def score(
        self, image: ImageLike, prompt: str | PromptRecord, *, model_key: str = "upload", sample_index: int = 0
    ) -> ScoreOutput:
        """Score one image against one prompt.

        Args:
            image: a PIL image, an image file path, encoded image bytes, or an H×W(×3|4) uint8
                array (float arrays in [0, 1] are scaled). Converted to 8-bit RGB as
                `evaluator.images.load_image` documents.
            prompt: a prompt id (`"color_pos0_neg1_004"`), a `PromptRecord`, or a text in the
                benchmark's grammar (`"a photo of a red cup and a non-blue bowl"`).
            model_key: written in the record (`score_many` and `score_source`, which feed result
                files, require a split name, `[a-z0-9_]+`).
            sample_index: written in the record (which of a prompt's images this is).

        Returns:
            ScoreOutput: `record` (the verdict, as `negt2ibench score` writes it) and
            `observation` (what the models saw).

        Raises:
            UserError: an image that cannot be scored, an unknown prompt id, a prompt outside
                the grammar, or an invalid option; `MissingWeightsError` when a model is absent.

        Example:
            >>> out = Evaluator().score("cup.png", "color_pos0_neg1_004")  # doctest: +SKIP
            >>> out.record.passed  # doctest: +SKIP
            False
        """
        if not isinstance(model_key, str) or not model_key.strip():
            raise UserError(f"model_key must be a non-empty string, got {model_key!r}")
        non_negative("sample_index", sample_index)
        record = self.prompt(prompt)
        rgb = rgb_image(image, "image")
        self.require_weights([record])
        from evaluator.pipeline import score_image

        result, observation = score_image(
            rgb, record, self.perception, config=self.config, model_key=model_key, sample_index=sample_index
        )
        return ScoreOutput(record=result, observation=observation)

    def score_many(
        self,
        images: Sequence[ImageLike],
        prompts: Sequence[str | PromptRecord],
        *,
        model_key: str = "upload",
        sample_indices: Sequence[int] | None = None,
        batch_size: int | None = None,
        progress: bool = True,
        num_workers: int | None = None,
    ) -> list[ResultRecord]:
        """Score images in batches: one result record per image, in order, exactly as `negt2ibench score`.

        As there, an image that cannot be read or a prompt id that is not known becomes an
        error row (`record.error` says why) and the others are still scored.

        Args:
            images: images as `score` takes them (paths are read one batch at a time).
            prompts: one prompt per image: ids, records or texts in the grammar.
            model_key: written in every record.
            sample_indices: one per image; default: 0, 1, 2, … per prompt, in order.
            batch_size: images per batch (default: the evaluator's `batch_size`).
            progress: show a tqdm progress bar.
            num_workers: processes that decode (and on the CPU preprocess) the images while the
                models run (default: from the CPU count; 0: in this process). The records are the
                same with any number.

        Returns:
            list[ResultRecord]: one per image, in the order given.

        Raises:
            UserError: a bad argument, named: a model key that is not a split name, a batch size, worker
                count or sample index out of range, lengths that differ, an image array of another shape or
                range, a prompt text outside the grammar (`OptionError`); `MissingWeightsError`: a model's
                weights are not on this machine.
            TypeError: an image or a prompt of a type it does not take.
        """
        check_model_key(model_key)
        size = self.batch_size if batch_size is None else positive("batch_size", batch_size)
        if num_workers is not None:
            non_negative("num_workers", num_workers)
        entries = self._items(images, prompts, sample_indices)
        self.require_weights([record for _, record in entries if record is not None])
        return self._score_items(entries, size, model_key, progress, num_workers)

    def _items(
        self,
        images: Sequence[ImageLike],
        prompts: Sequence[str | PromptRecord],
        sample_indices: Sequence[int] | None,
    ) -> list[tuple[ImageItem, PromptRecord | None]]:
        """`score_many`'s images as the engine's items (prompt id, sample index, a fetcher), each with its
        prompt record (None: an id not known, an error row)."""
        from evaluator.sources import ImageItem

        if len(images) != len(prompts):
            raise UserError(f"images and prompts must have the same length, got {len(images)} and {len(prompts)}")
        resolved = [self._resolve(prompt, f"prompts[{i}]") for i, prompt in enumerate(prompts)]
        if sample_indices is None:
            sample_indices = running_counts([prompt_id for prompt_id, _ in resolved])
        elif len(sample_indices) != len(images):
            raise UserError(f"sample_indices must have one index per image, got {len(sample_indices)}")
        return [
            (
                ImageItem(prompt_id, non_negative(f"sample_indices[{i}]", sample), fetcher(image, f"images[{i}]")),
                record,
            )
            for i, (image, (prompt_id, record), sample) in enumerate(zip(images, resolved, sample_indices, strict=True))
        ]

    def _score_items(
        self,
        entries: list[tuple[ImageItem, PromptRecord | None]],
        size: int,
        model_key: str,
        progress: bool,
        num_workers: int | None,
    ) -> list[ResultRecord]:
        """The items scored in the batches `negt2ibench score` would make, through its engine."""
        from tqdm.auto import tqdm

        from evaluator.loader import Work
        from evaluator.pipeline import score_batches

        work = [Work.look_up(item, PromptIndex([record] if record is not None else [])) for item, record in entries]
        groups, start = [], 0
        for batch in batches(entries, size):  # the batches `negt2ibench score` would make
            groups.append(list(range(start, start + len(batch))))
            start += len(batch)
        records: list[ResultRecord] = []
        with tqdm(total=len(entries), unit="img", desc=f"score {model_key}", disable=not progress) as bar:
            score_batches(
                work,
                groups,
                self.perception,
                config=self.config,
                model_key=model_key,
                on_record=records.append,
                on_batch=bar.update,
                num_workers=num_workers,
            )
        return records

    def _resolve(self, prompt: str | PromptRecord, argument: str) -> tuple[str, PromptRecord | None]:
        """(prompt id, record) of one of `score_many`'s prompts; the record is None for an id that is
        not known, which becomes an error row as in `negt2ibench score`."""
        if isinstance(prompt, str) and prompt.strip() and not any(c.isspace() for c in prompt.strip()):
            prompt_id = prompt.strip()
            return prompt_id, (self.prompts[prompt_id] if prompt_id in self.prompts else None)
        try:
            record = self.prompt(prompt)
        except (TypeError, UserError) as error:
            raise type(error)(f"{argument}: {error}") from None
        return record.prompt_id, record

    def score_source(
        self,
        source: str | Path,
        *,
        out: str | Path,
        model_key: str | None = None,
        split: str | None = None,
        prompt_id: str | None = None,
        limit: int | None = None,
        batch_size: int | None = None,
        progress: bool = True,
        num_workers: int | None = None,
    ) -> ScoreSummary:
        """`negt2ibench score`: score an image source, appending one record per image to `out`.

        Keys in `out` are skipped (a rerun resumes); under `accelerate launch` each process scores its share.

        Args:
            source: a folder of `{prompt_id}_{sample_index}.png`, a dataset (folder or Hub), or an image file.
            out: the JSONL file records are appended to.
            model_key: the records' model key (default: the one the source names).
            split: the dataset's split to score.
            prompt_id: the prompt of a single image file.
            limit: score at most this many images.
            batch_size: images per batch (default: this evaluator's).
            progress: show a progress bar.
            num_workers: processes decoding images while the models run (default: from the CPU count; 0: here).

        Returns:
            The run's counts; a folder's files not named as images are in its `skipped_files`.

        Raises:
            UserError: a source that cannot be read, or an `out` that cannot be appended to.
            MissingWeightsError: a model the source's prompts need is absent.
        """
        from evaluator.config import EVALUATOR_VERSION
        from evaluator.resultio import check_appendable
        from evaluator.sources import resolve_source

        skipped: list[str] = []
        items, default_key = resolve_source(source, split=split, prompt_id=prompt_id, skipped=skipped)
        check_appendable(out, EVALUATOR_VERSION, self.config.config_hash)  # refused before any model loads
        index = self.prompts
        self.load([index[item.prompt_id] for item in items if item.prompt_id in index])
        from evaluator.pipeline import score_images

        summary = score_images(
            items,
            index,
            self.perception,
            out_path=out,
            config=self.config,
            model_key=model_key or default_key,
            batch_size=self.batch_size if batch_size is None else batch_size,
            limit=limit,
            progress=progress,
            num_workers=num_workers,
        )
        summary.skipped_files = skipped
        return summary
