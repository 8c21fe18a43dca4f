"""The images to annotate (docs/validation.md): a seeded sample, even over categories, settings and splits.

`stratified_sample` is pure: candidates in, sample out. Per category it takes `per_category`
images, spread as evenly as the images allow over the 8 settings, and within each
(category, setting) over the model splits; remainders go to the settings and splits that have
had the fewest so far, ties broken by the seeded generator, so the whole sample stays balanced
too (600 = 6 × 100 gives 75 per setting). Within a cell distinct prompts are preferred. The
sample is shuffled (seeded), so annotators see the categories mixed.

`dataset_candidates` reads the image keys of a dataset folder's splits; `read_sample` /
`write_sample` move the sample through ``sample.jsonl`` (one `SampleItem` per line).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import CATEGORIES, SETTINGS, setting_name
from negt2ibench.core.errors import UserError

from .annotations import ImageKey, write_lines

SETTING_ORDER = tuple(setting_name(p, n) for p, n in SETTINGS)


class SampleItem(BaseModel):
    """One image to annotate and where to fetch it (`dataset`/`shard`/`row`: row `row` of that
    parquet file of the dataset folder; the key alone finds it in the Hub dataset)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt_id: str
    model_key: str
    sample_index: int
    category: str
    setting: str  # "pos1_neg1"
    dataset: str = ""
    shard: str = ""  # path inside the dataset folder, e.g. "images/sd_1_5-r000-00000.parquet"
    row: int = -1

    @property
    def image_key(self) -> ImageKey:
        return (self.model_key, self.prompt_id, self.sample_index)


def allocate(total: int, capacity: Mapping[str, int], rng: random.Random, used: Mapping[str, int]) -> dict[str, int]:
    """Split `total` over bins as evenly as their capacities allow.

    Whole shares first; the remainder goes one each to the open bins with the smallest `used`
    (running totals elsewhere in the sample), ties at random. Never exceeds a capacity, so the
    result sums to less than `total` only when all capacities together are smaller.
    """
    counts = dict.fromkeys(capacity, 0)
    remaining = min(total, sum(capacity.values()))
    while remaining > 0:
        open_bins = [k for k in sorted(capacity) if counts[k] < capacity[k]]
        share, extra = divmod(remaining, len(open_bins))
        if share == 0:
            ranked = sorted(open_bins, key=lambda k: (used.get(k, 0) + counts[k], rng.random()))
            for key in ranked[:extra]:
                counts[key] += 1
            break
        for key in open_bins:
            add = min(share, capacity[key] - counts[key])
            counts[key] += add
            remaining -= add
    return counts


def _pick(cell: list[SampleItem], count: int, used_prompts: set[str], rng: random.Random) -> list[SampleItem]:
    """`count` random items of the cell, one per prompt as long as unused prompts last."""
    shuffled = list(cell)
    rng.shuffle(shuffled)
    chosen: list[SampleItem] = []
    for item in shuffled:
        if len(chosen) < count and item.prompt_id not in used_prompts:
            chosen.append(item)
            used_prompts.add(item.prompt_id)
    taken = {id(item) for item in chosen}
    chosen += [item for item in shuffled if id(item) not in taken][: count - len(chosen)]
    return chosen


def stratified_sample(candidates: Iterable[SampleItem], *, per_category: int = 100, seed: int = 0) -> list[SampleItem]:
    """A seeded sample of `per_category` images per category (fewer only where the images run out).

    >>> items = [SampleItem(prompt_id=f"color_{s}_{k:03d}", model_key=m, sample_index=0,
    ...          category="color", setting=s) for s in SETTING_ORDER for k in range(5) for m in "ab"]
    >>> picked = stratified_sample(items, per_category=16, seed=0)
    >>> sorted(Counter(i.setting for i in picked).values()), sorted(Counter(i.model_key for i in picked).values())
    ([2, 2, 2, 2, 2, 2, 2, 2], [8, 8])
    """
    cells: dict[str, dict[str, dict[str, list[SampleItem]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list))
    )
    for item in sorted(candidates, key=lambda i: i.image_key):
        cells[item.category][item.setting][item.model_key].append(item)
    rng = random.Random(f"negt2ibench:annotation-sample:{seed}")
    setting_totals: Counter[str] = Counter()
    split_totals: Counter[str] = Counter()
    chosen: list[SampleItem] = []
    for category in [c for c in CATEGORIES if c in cells] + sorted(set(cells) - set(CATEGORIES)):
        settings = cells[category]
        capacity = {s: sum(len(cell) for cell in settings[s].values()) for s in settings}
        for setting, count in allocate(per_category, capacity, rng, setting_totals).items():
            setting_totals[setting] += count
            splits = settings[setting]
            used_prompts: set[str] = set()
            split_counts = allocate(count, {k: len(v) for k, v in splits.items()}, rng, split_totals)
            for split, split_count in split_counts.items():
                split_totals[split] += split_count
                chosen += _pick(splits[split], split_count, used_prompts, rng)
    rng.shuffle(chosen)
    return chosen


# ------------------------------------------------------------------------------------------- files


def split_shards(dataset_dir: Path) -> dict[str, list[Path]]:
    """The image splits of a dataset folder, {key: parquet shards}. The one place that finds them
    (re-point here when split discovery moves)."""
    from dataset_builder.layout import image_splits

    return image_splits(dataset_dir)


def dataset_candidates(
    dataset_dir: str | Path, splits: Sequence[str] | None, prompts: Mapping[str, PromptRecord]
) -> list[SampleItem]:
    """Every image of the chosen splits (all when None) as a `SampleItem`, with its category and setting.

    Reads only the key columns. An unknown split, or an image of a prompt id the prompts do not
    hold, is a `UserError`.
    """
    import pyarrow.parquet as pq

    root = Path(dataset_dir)
    available = split_shards(root)
    if not available:
        raise UserError(f"{root} holds no image splits (images/<split>-*.parquet)")
    wanted = list(splits) if splits else list(available)
    missing = [s for s in wanted if s not in available]
    if missing:
        raise UserError(f"{root}: no split {', '.join(missing)} (splits there: {', '.join(available)})")
    items = []
    for split in wanted:
        for shard in available[split]:
            table = pq.read_table(shard, columns=["prompt_id", "sample_index"]).to_pylist()
            for row, record in enumerate(table):
                prompt = prompts.get(record["prompt_id"])
                if prompt is None:
                    raise UserError(
                        f"{shard.name} row {row}: prompt id {record['prompt_id']!r} is not in the prompts "
                        "(images of another corpus? pass --prompts)"
                    )
                items.append(
                    SampleItem(
                        prompt_id=prompt.prompt_id,
                        model_key=split,
                        sample_index=int(record["sample_index"]),
                        category=prompt.category,
                        setting=prompt.setting,
                        dataset=str(root),
                        shard=shard.relative_to(root).as_posix(),
                        row=row,
                    )
                )
    return items


def write_sample(items: Iterable[SampleItem], path: str | Path) -> int:
    """Write the sample as JSONL in its (shuffled) order, atomically; returns the line count."""
    return write_lines((item.model_dump_json() for item in items), path)


def read_sample(path: str | Path) -> list[SampleItem]:
    """The items of a ``sample.jsonl``; a malformed line is a `UserError` naming it."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such sample file")
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                items.append(SampleItem.model_validate_json(line))
            except ValidationError as error:
                raise UserError(f"{path}:{number}: not a sample line ({error.errors()[0].get('msg')})") from None
    return items
