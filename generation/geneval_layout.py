"""GenEval's image layout as a place `generate` writes to: `generate --benchmark geneval --out DIR`.

    DIR/00000/metadata.jsonl        prompt 0's metadata, one JSON object, as GenEval's sample script writes it
    DIR/00000/samples/0000.png      its images, 0000 … N-1 (GenEval's README; `geneval score` reads them)
    DIR/generation.json             the model and settings of the run (a resume with others is refused)

The run is `generation.runner.generate_images` with this store in place of the parquet shards: the
same model registry, seeds from (prompt id, sample index) (`geneval_{N:05d}`), resume by what is on
disk, contiguous shares per rank, out-of-memory halving. Each file is written whole
(`negt2ibench.core.atomic.atomic_file`), so a killed run leaves no half image. The prompts come from
the caller (`evaluator.geneval.prompts`, via the CLI shell): generation does not import the evaluator.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dataset_builder.layout import (
    GENEVAL_FOLDER,
    GENEVAL_METADATA,
    GENEVAL_SAMPLE,
    GENEVAL_SAMPLES,
    geneval_index,
    geneval_prompt_folder,
    geneval_prompt_id,
    geneval_sample_path,
)
from negt2ibench.core.atomic import atomic_file
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import check, positive_int

from .registry import ModelSpec
from .shards import ImageKey, ImageRecord
from .work import WorkItem, image_seed

SETTINGS_FILE = "generation.json"


class GenEvalPromptLike(Protocol):
    """What generation reads of a GenEval prompt (`evaluator.geneval.prompts.GenEvalPrompt`)."""

    @property
    def index(self) -> int: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


def plan_geneval_work(prompts: Sequence[GenEvalPromptLike], num_images: int) -> list[WorkItem]:
    """Every (prompt, sample) pair, prompt-major, each with the seed of (`geneval_{N:05d}`, sample)."""
    num_images = check("num_images", num_images, positive_int)
    work = []
    for prompt in prompts:
        key = geneval_prompt_id(prompt.index)
        work += [WorkItem(key, i, str(prompt.metadata["prompt"]), image_seed(key, i)) for i in range(num_images)]
    return work


def existing_samples(root: Path) -> set[ImageKey]:
    """The (prompt id, sample index) of every image already in ROOT."""
    done: set[ImageKey] = set()
    if not root.is_dir():
        return done
    for folder in root.iterdir():
        samples = folder / GENEVAL_SAMPLES
        if GENEVAL_FOLDER.match(folder.name) and samples.is_dir():
            for path in samples.iterdir():
                match = GENEVAL_SAMPLE.match(path.name)
                if match and path.is_file():
                    done.add((geneval_prompt_id(int(folder.name)), int(match["index"])))
    return done


@dataclass
class GenEvalFolderWriter:
    """Writes each image as `{N:05d}/samples/{i:04d}.png`, and the prompt's metadata.jsonl with its first."""

    root: Path
    metadata: Mapping[str, Mapping[str, Any]]  # prompt id → metadata
    written: list[Path] = field(default_factory=list)

    def add(self, record: ImageRecord) -> Path:
        index = geneval_index(record.prompt_id)
        if index is None or record.prompt_id not in self.metadata:
            raise UserError(f"{record.prompt_id!r} is not one of the GenEval prompts of this run")
        metadata_path = geneval_prompt_folder(self.root, index) / GENEVAL_METADATA
        if not metadata_path.is_file():
            with atomic_file(metadata_path, "w") as handle:
                json.dump(dict(self.metadata[record.prompt_id]), handle)  # as GenEval's diffusers_generate.py:127-128
        path = geneval_sample_path(self.root, index, record.sample_index)
        with atomic_file(path) as handle:
            handle.write(record.png)
        self.written.append(path)
        return path

    def flush(self) -> None:
        return None  # every image is on disk as soon as it is added


@dataclass(frozen=True)
class GenEvalFolderStore:
    """GenEval's layout under ROOT, for PROMPTS (`generation.runner.ImageStore`)."""

    root: Path
    prompts: Sequence[GenEvalPromptLike]

    def check_settings(self, spec: ModelSpec) -> None:
        """Refuse to resume a folder made by another model or with other settings; record them otherwise."""
        wanted = {"model_key": spec.key, "model_id": spec.hub_id, **spec.settings()}
        path = self.root / SETTINGS_FILE
        if path.is_file():
            try:
                there = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:
                raise UserError(f"{path} is not JSON: move it away, or write to another --out") from None
            differing = sorted(name for name in wanted if there.get(name, "(absent)") != wanted[name])
            if differing:
                shown = ", ".join(
                    f"{name}: {there.get(name, '(absent)')!r} there, {wanted[name]!r} now" for name in differing
                )
                raise UserError(f"{self.root} was generated with other settings ({shown}); write to another --out")
            return
        with atomic_file(path, "w") as handle:
            json.dump(wanted, handle, indent=2, sort_keys=True)

    def done(self) -> set[ImageKey]:
        return existing_samples(self.root)

    def writer(self, rank: int) -> GenEvalFolderWriter:
        return GenEvalFolderWriter(self.root, {geneval_prompt_id(p.index): p.metadata for p in self.prompts})


def geneval_completeness(
    root: Path, prompts: Sequence[GenEvalPromptLike], num_images: int, show: int = 20
) -> list[str]:
    """Lines saying whether ROOT holds every prompt × NUM_IMAGES image, and which are missing."""
    done = existing_samples(root)
    expected = [(geneval_prompt_id(p.index), i) for p in prompts for i in range(num_images)]
    missing = [key for key in expected if key not in done]
    lines = [f"GenEval layout {root}: {len(expected) - len(missing)} of {len(expected)} images"]
    if missing:
        lines.append(f"missing {len(missing)} images, e.g.:")
        lines += [f"  {prompt_id} sample {index}" for prompt_id, index in missing[:show]]
        if len(missing) > show:
            lines.append(f"  ... and {len(missing) - show} more")
    else:
        lines.append("complete: every expected image present")
    return lines
