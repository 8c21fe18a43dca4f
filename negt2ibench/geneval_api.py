"""The Python API of GenEval on this project's detectors, as `negt2ibench geneval` runs it.

    >>> from negt2ibench import GenEvalEvaluator
    >>> ev = GenEvalEvaluator("geneval", device="auto")        # models load lazily, on the first score
    >>> line = ev.score("dog.png", 12)                          # doctest: +SKIP
    >>> line.correct, line.reason                               # doctest: +SKIP
    >>> ev.score_source("geneval_images/", out="results.jsonl")  # doctest: +SKIP

A separate class from `Evaluator` (whose prompts, records and rules are NegT2IBench's): it holds one
GenEval preset (`evaluator.geneval.config.PRESETS`, with GenEval's `--options` applied) and the
perception built from it. Neither preset is GenEval's mmdet checkpoint (docs/geneval.md).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluator.geneval.config import PRESETS, GenEvalConfig
from evaluator.geneval.prompts import GenEvalPrompt, load_geneval_prompts, metadata_problem, prompt_index
from negt2ibench.core.errors import UserError

from .inputs import positive, rgb_image

if TYPE_CHECKING:
    from evaluator.geneval.records import GenEvalRecord
    from evaluator.geneval.summary import GenEvalSummary
    from evaluator.pipeline import ScoreSummary


class GenEvalEvaluator:
    """GenEval's scorer on one preset: `geneval` (Mask2Former Swin-S COCO instance through
    transformers), `geneval_rfdetr` (RF-DETR Seg XL) or `geneval_rfdetr_sam` (+ SAM 2.1), with CLIP
    ViT-L/14 colours.

    Args:
        preset: a preset name or a `GenEvalConfig`.
        options: GenEval's `--options` (`{"threshold": "0.25", "model": "path/to/mask2former"}`).
        device: `auto`, `cpu`, `cuda`, `cuda:N` or `mps` (checked now).
        weights_dir: the folder `negt2ibench download-models --preset geneval --dir DIR` filled.
        batch_size: images per model batch.
        perception: an object with `observe(images, prompts)` instead of the real models (tests).
        metadata: another `evaluation_metadata.jsonl` (default: GenEval's 553 prompts, shipped).
    """

    def __init__(
        self,
        preset: str | GenEvalConfig = "geneval",
        *,
        options: Mapping[str, str] | None = None,
        device: str = "auto",
        weights_dir: str | Path | None = None,
        batch_size: int = 8,
        perception: Any = None,
        metadata: str | Path | None = None,
    ):
        config = preset if isinstance(preset, GenEvalConfig) else PRESETS[preset]
        self.config = config.with_options(options or {})
        self.batch_size = positive("batch_size", batch_size)
        if perception is None:
            from negt2ibench.core.launch import check_device

            check_device(device)  # an unknown or absent device fails here, before any model loads
        elif device != "auto" or weights_dir is not None:
            raise UserError("pass either perception or device/weights_dir: a given perception has its own")
        self.device, self.weights_dir = device, weights_dir
        self.prompts: list[GenEvalPrompt] = load_geneval_prompts(metadata)
        self._perception = perception
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"GenEvalEvaluator(preset={self.config.name!r}, config_hash={self.config.config_hash!r})"

    @property
    def perception(self):
        """The models (`evaluator.geneval.perception.GenEvalPerception` unless one was given)."""
        with self._lock:
            if self._perception is None:
                from evaluator.geneval.perception import GenEvalPerception

                self._perception = GenEvalPerception(self.config, device=self.device, weights_dir=self.weights_dir)
            return self._perception

    def require_weights(self) -> None:
        """Check that the preset's weights are on this machine: a look at the disk, no model, no torch,
        no network (`MissingWeightsError` names the `download-models --preset` to run). A given
        perception has nothing to look for."""
        if self._perception is not None:
            return
        from evaluator.models.weights import require_weights
        from negt2ibench.core.local_files import require_modules

        require_modules("torch", "transformers")  # what to install comes before what to download
        require_weights(self.config, self.weights_dir)

    def load(self) -> GenEvalEvaluator:
        """Load every model now, so a missing weight fails here, not on the first score.

        Returns:
            This evaluator, loaded.

        Raises:
            MissingLibraryError: torch or transformers is not installed.
            MissingWeightsError: a weight of the preset is absent (exit 2 in the CLI), naming the
                `download-models --preset` to run.
        """
        self.require_weights()
        load_all = getattr(self.perception, "load_all", None)
        if load_all is not None:
            load_all()
        return self

    def prompt(self, prompt: int | str | Mapping[str, Any]) -> GenEvalPrompt:
        """A GenEval prompt from its index, its id or a metadata object.

        Args:
            prompt: the index (12), the id (`geneval_00012`) or a metadata object (a prompt of one's own,
                given index -1).

        Returns:
            The prompt.

        Raises:
            UserError: an index or id outside GenEval's prompts, or a metadata object GenEval could not
                score (the message says what is wrong).
        """
        if isinstance(prompt, Mapping):
            problem = metadata_problem(prompt)
            if problem:
                raise UserError(f"not GenEval metadata: {problem}")
            return GenEvalPrompt(-1, dict(prompt))
        index = prompt_index(prompt) if isinstance(prompt, str) else prompt
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < len(self.prompts):
            raise UserError(f"unknown GenEval prompt {prompt!r}: give 0 … {len(self.prompts) - 1} or geneval_NNNNN")
        return self.prompts[index]

    def score(self, image, prompt: int | str | Mapping[str, Any], *, model_key: str = "upload") -> GenEvalRecord:
        """GenEval's verdict on one image: the result line `negt2ibench geneval score` would write.

        Args:
            image: a PIL image, an image file path, encoded image bytes, or an image array (as
                `Evaluator.score` takes).
            prompt: the prompt's index, id or metadata object (`prompt`).
            model_key: written in the line.

        Returns:
            The result line: the verdict (`correct`), its reason and what was detected.

        Raises:
            UserError: an unknown prompt, or an image that cannot be scored.
            MissingWeightsError: a weight of the preset is absent.
        """
        record = self.prompt(prompt)
        rgb = rgb_image(image, "image")
        self.require_weights()  # a missing weight: one error naming `download-models --preset`, before torch
        from evaluator.engine import Job
        from evaluator.geneval.scoring import geneval_step
        from evaluator.loader import Loaded, Work
        from evaluator.sources import ImageItem

        self.load()
        label = str(image) if isinstance(image, (str, Path)) else "upload"
        job = Job(Work(ImageItem(record.prompt_id, 0, lambda: rgb, label), record), model_key)
        step = geneval_step(self.perception, self.config)
        [outcome] = step.forward([(job, Loaded(0, image=rgb))])
        [(_, line)] = step.records(job, outcome)
        return line

    def score_source(
        self,
        source: str | Path,
        *,
        out: str | Path,
        model_key: str | None = None,
        split: str | None = None,
        limit: int | None = None,
        batch_size: int | None = None,
        progress: bool = True,
        num_workers: int | None = None,
    ) -> ScoreSummary:
        """`negt2ibench geneval score`: every image of GenEval's layout into the JSONL `out`, resuming.

        `out` is checked and the models loaded before any work.

        Args:
            source: a folder in GenEval's layout, or a dataset with `geneval_*` splits.
            out: the JSONL file lines are appended to (lines already there are skipped).
            model_key: the lines' model key (default: the source's).
            split: the dataset's split to score.
            limit: score at most this many images.
            batch_size: images per batch (default: this evaluator's).
            progress: show a progress bar.
            num_workers: processes that decode images while the models run (default: from the CPU count;
                0: in this process).

        Returns:
            The run's counts; the files of the source not read as images are in its `skipped_files`.

        Raises:
            UserError: a source that cannot be read, or an `out` that cannot be appended to.
            MissingWeightsError: a weight of the preset is absent.
        """
        from evaluator.geneval.config import GENEVAL_VERSION
        from evaluator.geneval.records import GenEvalRecord
        from evaluator.geneval.sources import resolve_geneval_source
        from evaluator.resultio import check_appendable

        found = resolve_geneval_source(source, self.prompts, split=split)
        check_appendable(out, GENEVAL_VERSION, self.config.config_hash, record_type=GenEvalRecord)
        self.require_weights()  # before torch and the models load
        from evaluator.geneval.scoring import score_geneval

        self.load()
        summary = score_geneval(
            found,
            self.perception,
            out_path=out,
            config=self.config,
            model_key=model_key,
            batch_size=self.batch_size if batch_size is None else batch_size,
            limit=limit,
            progress=progress,
            num_workers=num_workers,
        )
        summary.skipped_files = found.skipped
        return summary

    def summary(self, results: str | Path, *, samples: int = 4, resamples: int = 1000, seed: int = 0) -> GenEvalSummary:
        """`negt2ibench geneval summary` of a results file against this evaluator's prompts.

        Args:
            results: a JSONL file of GenEval result lines.
            samples: images per prompt the summary expects.
            resamples: bootstrap resamples of the intervals.
            seed: the bootstrap's seed.

        Returns:
            GenEval's numbers of the file: images and prompts correct, by task, overall with its
                interval, and whether every prompt has its samples.

        Raises:
            UserError: a file that cannot be read or holds no result line, or `samples` below 1.
        """
        return summarize_file(results, self.prompts, samples=samples, resamples=resamples, seed=seed)


def summarize_file(
    results: str | Path,
    prompts: Sequence[GenEvalPrompt] | None = None,
    *,
    samples: int = 4,
    resamples: int = 1000,
    seed: int = 0,
) -> GenEvalSummary:
    """GenEval's summary of a results file (written by this project or by GenEval's own scorer).

    Args:
        results: a JSONL file of GenEval result lines.
        prompts: the prompts the lines are of (default: GenEval's 553, shipped).
        samples: images per prompt the summary expects.
        resamples: bootstrap resamples of the intervals.
        seed: the bootstrap's seed.

    Returns:
        GenEval's numbers of the file: images and prompts correct, by task, overall with its interval,
            and whether every prompt has its samples.

    Raises:
        UserError: a file that cannot be read or holds no result line, or `samples` below 1.
    """
    from evaluator.geneval.summary import read_lines, summarize

    lines = read_lines(results)
    if not lines:
        raise UserError(f"{results} holds no GenEval result lines")
    chosen = prompts if prompts is not None else load_geneval_prompts()
    return summarize(lines, chosen, samples=positive("samples", samples), resamples=resamples, seed=seed)
