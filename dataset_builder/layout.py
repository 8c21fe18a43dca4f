"""The dataset folder's layout, in one place: file names, shard paths, split discovery, image file names.

A dataset folder is a Hugging Face dataset repo as it will be pushed:

    README.md                                 the dataset card (rendered from dataset_builder/dataset_card.md)
    eval.yaml                                 the Hub's benchmark definition (dataset_builder/benchmark.py)
    prompts/test-00000-of-00001.parquet       config "prompts", split "test"
    prompts.jsonl                             the same records for people who do not use `datasets`
    images/{key}-r{rank:03d}-{n:05d}.parquet  config "images", one split per model key (generation)
    results/                                  anything the user keeps there (pushed as is)

Every module that reads or writes such a folder (the builder, generation, the scorer, the Space)
asks this module where things are, so a change of layout is made here once. Split names and
slugs are `negt2ibench.core.names`'s; the atomic writers and the recovery of a killed folder swap
are `negt2ibench.core.atomic`'s.
"""

from __future__ import annotations

import re
from pathlib import Path

from negt2ibench.core.names import SPLIT_NAME

CARD_FILE = "README.md"
EVAL_FILE = "eval.yaml"  # makes the dataset repo a Hub Benchmark (dataset_builder.benchmark)
PROMPTS_DIR = "prompts"
PROMPTS_PARQUET = f"{PROMPTS_DIR}/test-00000-of-00001.parquet"
PROMPTS_JSONL = "prompts.jsonl"
# The training split's folder (`negt2ibench build --split train`, dataset_builder.train_split): its
# parquet split, and Flow-GRPO's files (`{split}_metadata.jsonl`, one metadata object a line, what its
# GenevalPromptDataset reads) for NegT2IBench and, under geneval/, for GenEval.
TRAIN_PROMPTS_PARQUET = f"{PROMPTS_DIR}/train-00000-of-00001.parquet"
TRAIN_METADATA = "train_metadata.jsonl"
TEST_METADATA = "test_metadata.jsonl"
GENEVAL_TRAIN_DIR = "geneval"
TRAIN_OUTPUTS = (TRAIN_METADATA, TEST_METADATA, GENEVAL_TRAIN_DIR)
IMAGES_DIR = "images"
RESULTS_DIR = "results"
DEFAULT_DATASET_DIR = Path("build/negt2ibench")

# The shards generation writes; any other `{key}-*.parquet` (e.g. a Hub download's
# `{key}-00000-of-00001.parquet`) still belongs to the split, as the card's `data_files` glob says.
SHARD_NAME = re.compile(r"^(?P<key>[a-z0-9_]+)-r(?P<rank>\d{3})-(?P<index>\d{5})\.parquet$")
# A loose image file of a folder of images: `{prompt_id}_{sample_index}.png` (the scorer also reads
# JPEG, WebP, BMP and TIFF; `import-images` takes PNG only, so images stay lossless).
IMAGE_FILE_NAME = re.compile(
    r"^(?P<prompt_id>.+)_(?P<sample_index>\d+)\.(?P<extension>png|jpe?g|webp|bmp|tiff?)$", re.IGNORECASE
)
# The form of a benchmark prompt id, `{category}_pos{P}_neg{N}_{k:03d}`: a file named after one with
# no `_{sample_index}` (`color_pos1_neg0_000.png`) lacks its sample index; it is not prompt `..._neg0` image 0.
BENCHMARK_ID_FORM = re.compile(r"^[a-z]+_pos\d+_neg\d+_\d{3}$")


# --------------------------------------------------------------------------- the images config


def images_dir(dataset_dir: str | Path) -> Path:
    return Path(dataset_dir) / IMAGES_DIR


def split_glob(key: str) -> str:
    """The files of split KEY relative to the folder (the card's `data_files` and the Hub glob)."""
    return f"{IMAGES_DIR}/{key}-*.parquet"


def shard_path(dataset_dir: str | Path, key: str, rank: int, index: int) -> Path:
    """Where rank RANK writes its INDEX-th shard of split KEY."""
    return images_dir(dataset_dir) / f"{key}-r{rank:03d}-{index:05d}.parquet"


def shard_rank_index(path: Path) -> tuple[str, int, int] | None:
    """(key, rank, index) of a shard named as generation names them, else None."""
    match = SHARD_NAME.match(Path(path).name)
    return (match["key"], int(match["rank"]), int(match["index"])) if match else None


def image_splits(dataset_dir: str | Path) -> dict[str, list[Path]]:
    """Every image split of the folder: `images/{key}-*.parquet` (key = before the first '-'), sorted.

    Hidden files (a writer's temp files) never match. Files whose prefix is not a valid split
    name are not a split.
    """
    splits: dict[str, list[Path]] = {}
    folder = images_dir(dataset_dir)
    if not folder.is_dir():
        return splits
    for path in sorted(folder.glob("*-*.parquet")):
        key = path.name.split("-", 1)[0]
        if SPLIT_NAME.match(key) and path.is_file():
            splits.setdefault(key, []).append(path)
    return dict(sorted(splits.items()))


def split_files(dataset_dir: str | Path, key: str) -> list[Path]:
    """The parquet files of split KEY, in name order (empty when the split is absent)."""
    return image_splits(dataset_dir).get(key, [])


def has_images(dataset_dir: str | Path) -> bool:
    """Whether the folder holds an images config (at least one parquet file under images/)."""
    return images_dir(dataset_dir).is_dir() and any(images_dir(dataset_dir).glob("*.parquet"))


def prompt_file(dataset_dir: str | Path) -> Path | None:
    """The folder's prompt records: prompts.jsonl, else the first prompts/*.parquet, else None."""
    root = Path(dataset_dir)
    if (root / PROMPTS_JSONL).is_file():
        return root / PROMPTS_JSONL
    parquet = sorted((root / PROMPTS_DIR).glob("*.parquet"))
    return parquet[0] if parquet else None


def image_file_key(name: str, *, png_only: bool = False) -> tuple[str, int] | None:
    """(prompt_id, sample_index) of a file named `{prompt_id}_{sample_index}.png`, else None
    (also for a benchmark prompt id without its sample index, see `lacks_sample_index`)."""
    match = IMAGE_FILE_NAME.match(name)
    if not match or (png_only and match["extension"].lower() != "png") or lacks_sample_index(name):
        return None
    return match["prompt_id"], int(match["sample_index"])


def lacks_sample_index(name: str) -> bool:
    """Whether NAME is a benchmark prompt id plus an image extension, without `_{sample_index}`."""
    stem, _, extension = name.rpartition(".")
    return bool(extension and BENCHMARK_ID_FORM.match(stem))


def image_file_name(prompt_id: str, sample_index: int) -> str:
    """`{prompt_id}_{sample_index}.png`: the name of an image outside a dataset (and inside a shard row)."""
    return f"{prompt_id}_{sample_index}.png"


def rank_path(out_path: str | Path, rank: int) -> Path:
    """`results.jsonl` → `results.rank{rank}.jsonl`: the file one process writes under a launcher."""
    out_path = Path(out_path)
    return out_path.with_name(f"{out_path.stem}.rank{rank}{out_path.suffix or '.jsonl'}")


# --------------------------------------------------------------------------- GenEval's image layout
# GenEval's own folders (its README): `{N:05d}/metadata.jsonl` holds prompt N's metadata, one JSON
# object, and `{N:05d}/samples/{i:04d}.png` its images; a dataset folder keeps GenEval images in the
# splits named `geneval_{key}`, whose prompt ids are `geneval_{N:05d}`.
GENEVAL_SPLIT_PREFIX = "geneval_"
GENEVAL_METADATA = "metadata.jsonl"
GENEVAL_SAMPLES = "samples"
GENEVAL_FOLDER = re.compile(r"^\d+$")  # GenEval reads a folder whose name is digits
GENEVAL_SAMPLE = re.compile(r"^(?P<index>\d+)\.png$")  # and an image named digits + .png


GENEVAL_PROMPT_ID = re.compile(r"^geneval_(?P<index>\d+)$")


def geneval_prompt_id(index: int) -> str:
    """`geneval_{index:05d}`: the prompt id of GenEval prompt INDEX (line INDEX of its metadata file)."""
    return f"{GENEVAL_SPLIT_PREFIX}{index:05d}"


def geneval_index(prompt_id: str) -> int | None:
    """INDEX of `geneval_{INDEX}`, else None."""
    match = GENEVAL_PROMPT_ID.match(prompt_id)
    return int(match["index"]) if match else None


def geneval_prompt_folder(root: str | Path, index: int) -> Path:
    """`ROOT/{index:05d}`: the folder of GenEval prompt INDEX."""
    return Path(root) / f"{index:05d}"


def geneval_sample_path(root: str | Path, index: int, sample_index: int) -> Path:
    """`ROOT/{index:05d}/samples/{sample_index:04d}.png`."""
    return geneval_prompt_folder(root, index) / GENEVAL_SAMPLES / f"{sample_index:04d}.png"
