"""Where GenEval images are read from: GenEval's own layout, or a `geneval_*` split of a dataset folder
(or of a Hub dataset repo).

GenEval's layout (README; evaluate_images.py:263-273): `DIR/{N:05d}/metadata.jsonl` holds prompt N's
metadata (one JSON object) and `DIR/{N:05d}/samples/{i:04d}.png` its images. As GenEval, a folder is
read when its name is digits, an image when its name is digits + `.png` (the whole name: GenEval's
`re.match` also takes `0000.png.bak`), and the metadata scored is the folder's own. A `geneval_*`
split names its images `geneval_{N:05d}` (prompt N of the shipped metadata file, or of `--metadata`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_builder.layout import (
    GENEVAL_FOLDER,
    GENEVAL_METADATA,
    GENEVAL_SAMPLE,
    GENEVAL_SAMPLES,
    GENEVAL_SPLIT_PREFIX,
    has_images,
    image_splits,
)
from evaluator.sources import ImageItem, Work, fetch_path, hub_dataset_items, local_dataset_items
from negt2ibench.core.atomic import recover_folder
from negt2ibench.core.errors import UserError
from negt2ibench.core.names import slug
from negt2ibench.core.options import REPO_ID

from .prompts import GenEvalPrompt, parse_metadata, prompt_id, prompt_index


@dataclass
class GenEvalSource:
    """The images of a source, each with its prompt (or why it has none), and a default model key."""

    work: list[Work]
    model_key: str
    layout: str  # "geneval" | "dataset" | "hub"
    skipped: list[str] = field(default_factory=list)  # entries of a GenEval folder that are not read


def is_geneval_layout(folder: Path) -> bool:
    """Whether FOLDER holds at least one `{digits}/metadata.jsonl` (GenEval's layout)."""
    if not folder.is_dir():
        return False
    return any(GENEVAL_FOLDER.match(entry.name) and (entry / GENEVAL_METADATA).is_file() for entry in folder.iterdir())


def _folder_prompt(folder: Path) -> tuple[GenEvalPrompt | None, str | None]:
    path = folder / GENEVAL_METADATA
    if not path.is_file():
        return None, f"bad metadata: {path} is missing"
    try:
        return GenEvalPrompt(int(folder.name), parse_metadata(path.read_bytes(), str(path))), None
    except UserError as error:
        return None, f"bad metadata: {error}"


def geneval_layout_work(root: Path, given: str) -> GenEvalSource:
    """GenEval's layout under ROOT; `given` is the path as the user wrote it, so `filename` reads as
    GenEval writes it (`os.path.join(imagedir, subfolder, "samples", imagename)`)."""
    work: list[Work] = []
    skipped: list[str] = []
    seen: dict[str, str] = {}
    for entry in sorted(root.iterdir(), key=lambda path: path.name):
        if not (entry.is_dir() and GENEVAL_FOLDER.match(entry.name)):
            if not entry.name.startswith("."):
                skipped.append(entry.name + ("/" if entry.is_dir() else ""))
            continue
        key = prompt_id(int(entry.name))
        if key in seen:
            raise UserError(f"{root}: folders {seen[key]} and {entry.name} are both GenEval prompt {int(entry.name)}")
        seen[key] = entry.name
        prompt, problem = _folder_prompt(entry)
        samples = entry / GENEVAL_SAMPLES
        names = (
            sorted(
                (path.name for path in samples.iterdir() if path.is_file() and GENEVAL_SAMPLE.match(path.name)),
                key=lambda name: int(name[:-4]),
            )
            if samples.is_dir()
            else []
        )
        for name in names:
            label = os.path.join(given, entry.name, GENEVAL_SAMPLES, name)
            item = ImageItem(key, int(name[:-4]), fetch_path(samples / name), label)
            work.append(Work(item, prompt, problem))
    if not seen:
        raise UserError(f"{root} holds no GenEval prompt folders ({{N:05d}}/metadata.jsonl + samples/{{i:04d}}.png)")
    return GenEvalSource(work, slug(root.resolve().name, fallback="geneval"), "geneval", skipped)


def _with_prompts(items: Sequence[ImageItem], prompts: Sequence[GenEvalPrompt], where: str) -> list[Work]:
    by_index = {prompt.index: prompt for prompt in prompts}
    work = []
    for item in items:
        index = prompt_index(item.prompt_id)
        if index in by_index:
            work.append(Work(item, by_index[index]))
        else:
            known = f"ids are geneval_00000 … geneval_{len(prompts) - 1:05d}"
            work.append(Work(item, None, f"unknown GenEval prompt {item.prompt_id!r} in {where} ({known})"))
    return work


def _geneval_split(splits: Sequence[str], split: str | None, where: str) -> str:
    if split is not None:
        if not split.startswith(GENEVAL_SPLIT_PREFIX):
            raise UserError(f"--split {split}: GenEval images are the splits named {GENEVAL_SPLIT_PREFIX}* of {where}")
        return split
    candidates = [name for name in splits if name.startswith(GENEVAL_SPLIT_PREFIX)]
    if len(candidates) != 1:
        listed = ", ".join(candidates) or "none"
        raise UserError(f"{where} holds GenEval splits {listed}: choose one with --split {GENEVAL_SPLIT_PREFIX}KEY")
    return candidates[0]


def resolve_geneval_source(
    images: str | Path, prompts: Sequence[GenEvalPrompt], *, split: str | None = None
) -> GenEvalSource:
    """The images of SRC: GenEval's layout, a dataset folder's `geneval_*` split, or a Hub repo's."""
    path = Path(images)
    if path.is_dir():
        recover_folder(path)  # a dataset folder whose rebuild was killed mid-swap is put right first
        if is_geneval_layout(path):
            return geneval_layout_work(path, str(images))
        if has_images(path):
            chosen = _geneval_split(list(image_splits(path)), split, str(path))
            key, items = local_dataset_items(path, chosen)
            return GenEvalSource(_with_prompts(items, prompts, f"split {key}"), key, "dataset")
        raise UserError(
            f"{path} is neither GenEval's layout ({{N:05d}}/metadata.jsonl + samples/{{i:04d}}.png) "
            f"nor a dataset folder with a {GENEVAL_SPLIT_PREFIX}* image split"
        )
    if path.exists():
        raise UserError(f"{path} is not a folder: give GenEval's image folder or a dataset folder")
    if REPO_ID.match(str(images)):
        if not split or not split.startswith(GENEVAL_SPLIT_PREFIX):
            raise UserError(f"a Hub dataset source needs --split {GENEVAL_SPLIT_PREFIX}KEY")
        items = hub_dataset_items(str(images), split)
        return GenEvalSource(_with_prompts(items, prompts, f"{images}[{split}]"), split, "hub")
    raise UserError(f"no such image folder or dataset: {images}")
