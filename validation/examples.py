"""Example files to try the commands on, on a machine without weights or internet access.

`negt2ibench examples --out DIR` (`write_examples`) writes, from the real code paths where they can
run here:

- `pictures/`: synthetic drawings (`draw_picture`: each says SYNTHETIC EXAMPLE and names its
  prompt's objects; no text-to-image model made them), one per (category, setting) of the corpus;
- `dataset/`: those pictures as the image split `synthetic_drawings` of a dataset folder, written by
  `generation.importer.import_images` (what `import-images` runs);
- `results/{preset}.jsonl`: result records of those pictures under three presets, shipped in
  `validation/data/examples/`. They were written by the real pipeline (`evaluator.pipeline.score_images`,
  its rules and records) with the test suite's tiny random-weight models standing in for the real
  weights (`tests/helpers/examples_data.py` regenerates them, `tests/validation/test_examples.py`
  checks they are what the pipeline writes): their verdicts say nothing about any model;
- `sample.jsonl`: the annotation sample of the split, drawn by `validation.sample` (what
  `annotation-sample` runs);
- `annotations.jsonl`: answers of three invented annotators (`example_annotator_1` ...) on the sample,
  seeded: no person gave them;
- `geneval/images/`: synthetic drawings in GenEval's layout for twelve of its prompts, and
  `geneval/results.jsonl`, GenEval result lines of them from the real GenEval scorer on tiny random
  models (shipped, as the results above);
- `README.md`: the commands to run on them.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from PIL import Image, ImageDraw

from dataset_builder.records import PromptRecord
from negt2ibench.core.errors import UserError

EXAMPLE_KEY = "synthetic_drawings"  # the split (model key) of the example pictures
EXAMPLE_MODEL_ID = "synthetic drawings (no text-to-image model)"
EXAMPLE_PRESETS = ("current", "no_sam", "c2")  # one results file per evaluator configuration
ANNOTATORS = ("example_annotator_1", "example_annotator_2", "example_annotator_3")
PER_CATEGORY = 4  # the annotation sample: 24 of the 48 pictures
GENEVAL_PROMPTS_PER_TASK = 2  # twelve GenEval prompts, two of each of its six tasks
DATA = Path(__file__).resolve().parent / "data" / "examples"
SIZE = (192, 144)


def example_prompts(prompts: Sequence[PromptRecord]) -> list[PromptRecord]:
    """The first prompt (by id) of each category × setting: 6 × 8 = 48 prompts of the corpus."""
    first: dict[tuple[str, str], PromptRecord] = {}
    for prompt in sorted(prompts, key=lambda p: p.prompt_id):
        first.setdefault((prompt.category, prompt.setting), prompt)
    return [first[key] for key in sorted(first)]


def _colour(text: str) -> tuple[int, int, int]:
    digest = hashlib.sha256(text.encode()).digest()
    return (80 + digest[0] % 150, 80 + digest[1] % 150, 80 + digest[2] % 150)


def draw_picture(key: str, objects: Sequence[str], size: tuple[int, int] = SIZE) -> Image.Image:
    """A synthetic picture: SYNTHETIC EXAMPLE, then one labelled box per object (the same for the same key)."""
    image = Image.new("RGB", size, _colour(key))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, size[0], 16), fill=(255, 255, 255))
    draw.text((4, 3), "SYNTHETIC EXAMPLE", fill=(200, 0, 0))
    width = size[0] // max(len(objects), 1)
    for number, name in enumerate(objects):
        left = number * width + 6
        box = (left, 30 + 12 * number, left + width - 12, size[1] - 10)
        draw.rectangle(box, fill=_colour(key + name), outline=(0, 0, 0))
        draw.text((box[0] + 3, box[1] + 3), name, fill=(0, 0, 0))
    return image


def write_pictures(folder: Path, prompts: Sequence[PromptRecord]) -> list[PromptRecord]:
    """The example pictures as `{prompt_id}_0.png` in FOLDER; the prompts they are of."""
    chosen = example_prompts(prompts)
    folder.mkdir(parents=True, exist_ok=True)
    for prompt in chosen:
        draw_picture(prompt.prompt_id, prompt.objects).save(folder / f"{prompt.prompt_id}_0.png")
    return chosen


def geneval_example_prompts() -> list:
    """Two GenEval prompts of each of its six tasks (the first ones by index)."""
    from evaluator.geneval.prompts import load_geneval_prompts

    chosen: dict[str, list] = {}
    for prompt in load_geneval_prompts():
        picked = chosen.setdefault(str(prompt.metadata["tag"]), [])
        if len(picked) < GENEVAL_PROMPTS_PER_TASK:
            picked.append(prompt)
    return sorted((p for picked in chosen.values() for p in picked), key=lambda p: p.index)


def write_geneval_pictures(root: Path) -> list:
    """Synthetic pictures in GenEval's layout (`{N:05d}/metadata.jsonl`, `samples/0000.png`)."""
    from dataset_builder.layout import geneval_prompt_folder, geneval_sample_path

    chosen = geneval_example_prompts()
    for prompt in chosen:
        folder = geneval_prompt_folder(root, prompt.index)
        (folder / "samples").mkdir(parents=True, exist_ok=True)
        (folder / "metadata.jsonl").write_text(json.dumps(dict(prompt.metadata)) + "\n", encoding="utf-8")
        names = [entry["class"] for entry in prompt.metadata["include"]]
        draw_picture(f"geneval_{prompt.index:05d}", names).save(geneval_sample_path(root, prompt.index, 0))
    return chosen


def invented_annotations(sample: Sequence, prompts: dict[str, PromptRecord]) -> list:
    """Three invented annotators' answers on each sampled image, seeded by the image and annotator:
    objects seen 9 times in 10, each statement's question answered yes or no at random."""
    from validation.annotations import AnnotationRecord, check_against_prompt

    records = []
    for item in sample:
        prompt = prompts[item.prompt_id]
        for annotator in ANNOTATORS:
            rng = random.Random(f"{item.prompt_id}/{item.sample_index}/{annotator}")
            record = AnnotationRecord(
                prompt_id=item.prompt_id,
                model_key=item.model_key,
                sample_index=item.sample_index,
                annotator=annotator,
                objects={name: rng.random() < 0.9 for name in prompt.objects},
                statements={str(s.index): rng.random() < 0.5 for s in prompt.statements},
                created_at=datetime(2025, 1, 1, tzinfo=timezone.utc),
            )
            check_against_prompt(record, prompt)
            records.append(record)
    return records


def write_examples(out: str | Path, *, overwrite: bool = False) -> list[Path]:
    """Write the example files into OUT (refused when OUT holds something, unless OVERWRITE); the
    files and folders written, README.md first."""
    from dataset_builder.loading import load_prompts
    from generation.importer import import_images
    from validation.annotations import write_annotations
    from validation.sample import dataset_candidates, stratified_sample, write_sample

    root = Path(out)
    if root.exists() and not root.is_dir():
        raise UserError(f"{root} is a file: give a folder for the examples")
    if root.is_dir() and any(root.iterdir()):
        if not overwrite:
            raise UserError(f"{root} is not empty: choose another --out, or pass --overwrite to replace it")
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    corpus = load_prompts()
    chosen = write_pictures(root / "pictures", corpus)
    import_images(EXAMPLE_KEY, root / "pictures", root / "dataset", chosen, model_id=EXAMPLE_MODEL_ID)
    shutil.copytree(DATA / "results", root / "results")
    index = {prompt.prompt_id: prompt for prompt in corpus}
    sample = stratified_sample(dataset_candidates(root / "dataset", None, index), per_category=PER_CATEGORY, seed=0)
    write_sample(sample, root / "sample.jsonl")
    write_annotations(invented_annotations(sample, index), root / "annotations.jsonl")
    write_geneval_pictures(root / "geneval" / "images")
    shutil.copyfile(DATA / "geneval_results.jsonl", root / "geneval" / "results.jsonl")
    shutil.copyfile(DATA / "README.md", root / "README.md")
    names = ["README.md", "pictures", "dataset", "results", "sample.jsonl", "annotations.jsonl", "geneval"]
    return [root / name for name in names]
