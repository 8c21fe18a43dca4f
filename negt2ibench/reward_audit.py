"""`negt2ibench reward audit`: does a model trained on the negation reward learn negation, or the reward?

For each checkpoint, the images it generated for training prompts and for a fresh draw (prompts of the
same design it never saw) are scored twice: by the reward (`negt2ibench.reward.Reward`, the share of a
prompt's elements the scorer finds satisfied) and by a second, independent judge (a VLM of `judges/`
in its statement mode, `pos`: one question per object and per statement, negated statements asked
affirmatively; its score is the mean P(satisfied)). Each mean is over prompts (a prompt's images
averaged first), with a seeded percentile bootstrap interval over prompts.

Two gaps suggest reward hacking, each flagged when its interval lies wholly above `margin`:

- **train ≫ fresh**: the reward on the training prompts minus the reward on the fresh draw. Both are
  the same reward on prompts of the same design, so a model that learnt negation scores alike on
  both; one that learnt its training prompts does not.
- **reward ≫ judge**: the reward minus the judge on the same images. Two judges are calibrated
  differently, so with several checkpoints it is the change since the first one (the model before
  training, as a rule) that is flagged: the reward rose more than the judge did. With one checkpoint
  the difference itself is flagged.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dataset_builder.records import PromptIndex, PromptRecord
from negt2ibench.core.bootstrap import DEFAULT_RESAMPLES, percentile_interval, resample_indices
from negt2ibench.core.errors import UserError
from negt2ibench.core.table import Column, Table

from .inputs import rgb_image

if TYPE_CHECKING:
    from evaluator.sources import ImageItem
    from judges.adapters import JudgeAdapter

    from .reward import Reward

DEFAULT_MARGIN = 0.05
JUDGE_MODE = "pos"  # the statement mode: negated statements asked affirmatively, inverted in code
SPLITS = ("train", "fresh")
TRAIN_GAP, JUDGE_GAP = "train ≫ fresh", "reward ≫ judge"


@dataclass(frozen=True)
class ImageScores:
    """The reward's and the judge's score of each image of one split, with its prompt id."""

    prompt_ids: tuple[str, ...]
    reward: tuple[float, ...]
    judge: tuple[float, ...]


@dataclass(frozen=True)
class CheckpointScores:
    """One checkpoint's images scored: its training prompts' and its fresh draw's."""

    name: str
    train: ImageScores
    fresh: ImageScores


@dataclass(frozen=True)
class Estimate:
    """A mean over prompts and its bootstrap interval."""

    value: float
    low: float
    high: float


@dataclass(frozen=True)
class AuditRow:
    """One checkpoint's line of the audit. `judge_gap` is the reward minus the judge over all its
    images, as the change since the first checkpoint when `since_first`."""

    checkpoint: str
    images: int
    reward_train: Estimate
    reward_fresh: Estimate
    judge_train: Estimate
    judge_fresh: Estimate
    train_gap: Estimate
    judge_gap: Estimate
    since_first: bool
    flags: tuple[str, ...]


def checkpoint_folders(root: str | Path) -> list[tuple[str, Path, Path]]:
    """The checkpoints of a folder: each sub-folder holding `train/` and `fresh/` image folders.

    Args:
        root: the folder.

    Returns:
        (name, train folder, fresh folder) per checkpoint, in the order of their names with numbers
        compared as numbers (`step_500` before `step_1000`).

    Raises:
        UserError: no sub-folder holds both, or ROOT is not a folder.
    """
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"{root} is not a folder of checkpoints")
    found = [
        (folder.name, folder / "train", folder / "fresh")
        for folder in root.iterdir()
        if (folder / "train").is_dir() and (folder / "fresh").is_dir()
    ]
    if not found:
        raise UserError(f"{root} holds no checkpoint folder with train/ and fresh/ image folders")
    return sorted(found, key=lambda entry: _natural_key(entry[0]))


def _natural_key(name: str) -> list[tuple[int, int | str]]:
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", name) if part]


def score_images(
    items: Sequence[ImageItem], prompts: PromptIndex, reward: Reward, judge: JudgeAdapter, *, batch_size: int = 8
) -> ImageScores:
    """The reward's and the judge's score of every image, BATCH_SIZE images at a time.

    Args:
        items: the images (`evaluator.sources.folder_items`).
        prompts: their prompts, by id.
        reward: the negation reward.
        judge: the second judge, asked in its statement mode.
        batch_size: images decoded and scored at once.

    Returns:
        The scores, in the order of ITEMS.

    Raises:
        UserError: an image whose prompt id PROMPTS lacks, an image that cannot be read.
        RewardError: the reward cannot score an image.
    """
    from judges.questions import questions_for
    from judges.runner import record_context
    from judges.verdict import judge_record

    context = record_context(judge, JUDGE_MODE)
    reward_scores: list[float] = []
    judge_scores: list[float] = []
    for start in range(0, len(items), batch_size):
        batch = items[start : start + batch_size]
        records = [_prompt_of(item, prompts) for item in batch]
        pictures = [rgb_image(item.fetch(), item.label or item.prompt_id) for item in batch]
        reward_scores += [scored.score for scored in reward.score(pictures, records)]
        asked = [questions_for(record, JUDGE_MODE) for record in records]
        flat_images = [picture for picture, questions in zip(pictures, asked, strict=True) for _ in questions]
        answers = judge.yes_probability(flat_images, [q.text for questions in asked for q in questions])
        offset = 0
        for item, record, questions in zip(batch, records, asked, strict=True):
            p_yes = answers[offset : offset + len(questions)]
            offset += len(questions)
            judged = judge_record(
                record, questions, p_yes, context=context, model_key="audit", sample_index=item.sample_index
            )
            judge_scores.append(float(judged.score or 0.0))
    return ImageScores(tuple(item.prompt_id for item in items), tuple(reward_scores), tuple(judge_scores))


def _prompt_of(item: ImageItem, prompts: PromptIndex) -> PromptRecord:
    if item.prompt_id not in prompts:
        raise UserError(f"{item.label or item.prompt_id}: prompt id {item.prompt_id!r} is not among the prompts given")
    return prompts[item.prompt_id]


# -- the numbers: means over prompts, intervals, flags ------------------------------------------------


def _prompt_means(prompt_ids: Sequence[str], values: Sequence[float]) -> np.ndarray:
    """Each prompt's mean over its images, prompts in order of first appearance."""
    groups: dict[str, list[float]] = {}
    for prompt_id, value in zip(prompt_ids, values, strict=True):
        groups.setdefault(prompt_id, []).append(value)
    return np.array([np.mean(group) for group in groups.values()], dtype=float)


def _resampled(means: np.ndarray, resamples: int, seed: int) -> tuple[float, np.ndarray]:
    """(the mean over prompts, its bootstrap replicates)."""
    if means.size == 0:
        return math.nan, np.full(resamples, math.nan)
    return float(means.mean()), means[resample_indices(means.size, resamples=resamples, seed=seed)].mean(axis=1)


def _estimate(value: float, replicates: np.ndarray) -> Estimate:
    low, high = percentile_interval(replicates)
    return Estimate(value, low, high)


def audit_checkpoints(
    checkpoints: Sequence[CheckpointScores],
    *,
    margin: float = DEFAULT_MARGIN,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> list[AuditRow]:
    """The audit's rows: means, intervals, gaps and flags per checkpoint (see the module's docstring).

    Args:
        checkpoints: the checkpoints in training order (the first is the baseline of the judge gap).
        margin: a gap is flagged when its interval's lower end is above it.
        resamples: bootstrap resamples (each split and checkpoint drawn with its own seed).
        seed: the first seed.

    Returns:
        One row per checkpoint, in order.
    """
    rows: list[AuditRow] = []
    first_difference: tuple[float, np.ndarray] | None = None
    for number, checkpoint in enumerate(checkpoints):
        seeds = iter(range(seed + 10 * number, seed + 10 * number + 10))  # independent draws per set
        means = {}
        for split in SPLITS:
            scores: ImageScores = getattr(checkpoint, split)
            for scorer in ("reward", "judge"):
                means[split, scorer] = _resampled(
                    _prompt_means(scores.prompt_ids, getattr(scores, scorer)), resamples, next(seeds)
                )
        (train_value, train_draws), (fresh_value, fresh_draws) = means["train", "reward"], means["fresh", "reward"]
        train_gap = _estimate(train_value - fresh_value, train_draws - fresh_draws)
        difference = _resampled(_paired_differences(checkpoint), resamples, next(seeds))
        since_first = first_difference is not None
        if first_difference is None:
            first_difference = difference
            judge_gap = _estimate(*difference)
        else:
            judge_gap = _estimate(difference[0] - first_difference[0], difference[1] - first_difference[1])
        flags = []
        if train_gap.low > margin:
            flags.append(TRAIN_GAP)
        if judge_gap.low > margin and (since_first or len(checkpoints) == 1):
            flags.append(JUDGE_GAP)
        rows.append(
            AuditRow(
                checkpoint=checkpoint.name,
                images=len(checkpoint.train.prompt_ids) + len(checkpoint.fresh.prompt_ids),
                reward_train=_estimate(*means["train", "reward"]),
                reward_fresh=_estimate(*means["fresh", "reward"]),
                judge_train=_estimate(*means["train", "judge"]),
                judge_fresh=_estimate(*means["fresh", "judge"]),
                train_gap=train_gap,
                judge_gap=judge_gap,
                since_first=since_first,
                flags=tuple(flags),
            )
        )
    return rows


def _paired_differences(checkpoint: CheckpointScores) -> np.ndarray:
    """Reward minus judge per prompt, over both splits (a prompt keyed by its split too)."""
    keys, differences = [], []
    for split in SPLITS:
        scores: ImageScores = getattr(checkpoint, split)
        keys += [f"{split}/{prompt_id}" for prompt_id in scores.prompt_ids]
        differences += [r - j for r, j in zip(scores.reward, scores.judge, strict=True)]
    return _prompt_means(keys, differences)


# -- the table and the plot ----------------------------------------------------------------------------

ESTIMATES = (
    ("reward_train", "reward: train"),
    ("reward_fresh", "reward: fresh"),
    ("judge_train", "judge: train"),
    ("judge_fresh", "judge: fresh"),
    ("train_gap", "train − fresh"),
    ("judge_gap", "reward − judge"),
)


def audit_table(rows: Sequence[AuditRow], *, margin: float = DEFAULT_MARGIN) -> Table:
    """The audit as a table: one row per checkpoint, each mean with its 95% interval.

    Args:
        rows: `audit_checkpoints`'s rows.
        margin: the flags' margin, stated in the notes.

    Returns:
        The table (Markdown, CSV and JSON through `negt2ibench.core.table`).
    """
    columns = [Column("checkpoint", "checkpoint", str), Column("images", "images", "{:d}")]
    for key, label in ESTIMATES:
        columns += [
            Column(key, label, "{:.3f}", interval=f"{key}_ci"),
            Column(f"{key}_ci", f"{label} interval", in_markdown=False, pair=True),
        ]
    columns.append(Column("flags", "flag", lambda flags: flags or "–"))
    cells = []
    for row in rows:
        cell: dict[str, object] = {"checkpoint": row.checkpoint, "images": row.images, "flags": ", ".join(row.flags)}
        for key, _ in ESTIMATES:
            estimate: Estimate = getattr(row, key)
            cell[key], cell[f"{key}_ci"] = estimate.value, (estimate.low, estimate.high)
        cells.append(cell)
    baseline = f" since {rows[0].checkpoint}" if any(row.since_first for row in rows) else ""
    return Table(
        name="reward_audit",
        title="Reward audit: the reward and a second judge on training prompts and a fresh draw",
        columns=columns,
        rows=cells,
        notes=(
            "Means over prompts with 95% bootstrap intervals over prompts. reward − judge: over each "
            f"checkpoint's images, as the change{baseline or ' (none: one checkpoint)'} after the first row.",
            f"Flagged when a gap's interval lies wholly above {margin:g}: {TRAIN_GAP} (the model scores "
            f"better on its training prompts than on unseen ones), {JUDGE_GAP} (the reward rose more than "
            "an independent judge saw).",
        ),
    )


def plot_audit(rows: Sequence[AuditRow], path: str | Path) -> Path:
    """The four means over checkpoints with their intervals, flagged checkpoints marked.

    Args:
        rows: `audit_checkpoints`'s rows.
        path: the PNG to write.

    Returns:
        PATH.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from negt2ibench.core import palette

    figure = Figure(figsize=(max(5.0, 1.2 * len(rows) + 2), 3.6))
    axes = figure.add_subplot(1, 1, 1)
    positions = np.arange(len(rows))
    series = (
        ("reward_train", "reward, training prompts", palette.BLUE, "-"),
        ("reward_fresh", "reward, fresh draw", palette.SKY_BLUE, "-"),
        ("judge_train", "judge, training prompts", palette.VERMILLION, "--"),
        ("judge_fresh", "judge, fresh draw", palette.ORANGE, "--"),
    )
    for key, label, color, style in series:
        estimates: list[Estimate] = [getattr(row, key) for row in rows]
        axes.plot(positions, [e.value for e in estimates], style, color=color, marker="o", label=label)
        axes.fill_between(positions, [e.low for e in estimates], [e.high for e in estimates], color=color, alpha=0.15)
    for position, row in zip(positions, rows, strict=True):
        if row.flags:
            axes.axvspan(position - 0.3, position + 0.3, color=palette.GREY, alpha=0.25)
            axes.annotate("; ".join(row.flags), (position, 1.02), ha="center", fontsize=7, color=palette.BLACK)
    axes.set_xticks(positions, [row.checkpoint for row in rows], rotation=30, ha="right")
    axes.set_ylim(-0.02, 1.1)
    axes.set_ylabel("mean score over prompts")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    FigureCanvasAgg(figure)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    return Path(path)


def run_audit(
    checkpoints: Sequence[tuple[str, Path, Path]],
    prompts: tuple[PromptIndex, PromptIndex],
    reward: Reward,
    judge: JudgeAdapter,
    *,
    out: str | Path,
    margin: float = DEFAULT_MARGIN,
    batch_size: int = 8,
    seed: int = 0,
) -> list[AuditRow]:
    """Score every checkpoint's images, then write the audit to OUT.

    Args:
        checkpoints: (name, training-prompt images folder, fresh-draw images folder) in training order;
            the folders hold `{prompt_id}_{sample_index}.png` files.
        prompts: the training prompts and the fresh draw's, by id.
        reward: the negation reward (loaded or not).
        judge: the second judge (loaded or not).
        out: the folder of `audit.md`, `audit.csv`, `audit.json` and `audit.png` (made if need be).
        margin: the flags' margin.
        batch_size: images decoded and scored at once.
        seed: the bootstrap's first seed.

    Returns:
        The rows, one per checkpoint.

    Raises:
        UserError: a folder without images, an image whose prompt is not given.
        RewardError: the reward cannot score an image.
    """
    from evaluator.sources import folder_items

    judge.load()
    scored = []
    for name, train_folder, fresh_folder in checkpoints:
        splits = [
            score_images(folder_items(Path(folder)), index, reward, judge, batch_size=batch_size)
            for folder, index in zip((train_folder, fresh_folder), prompts, strict=True)
        ]
        scored.append(CheckpointScores(name, *splits))
    rows = audit_checkpoints(scored, margin=margin, seed=seed)
    write_audit(rows, out, margin=margin)
    return rows


def write_audit(rows: Sequence[AuditRow], out: str | Path, *, margin: float = DEFAULT_MARGIN) -> dict[str, Path]:
    """The audit's table as Markdown, CSV and JSON, and its plot, in OUT.

    Args:
        rows: `audit_checkpoints`'s rows.
        out: the folder (made if need be).
        margin: the flags' margin, stated in the table's notes.

    Returns:
        The files written, by kind (`md`, `csv`, `json`, `png`).
    """
    import json

    from negt2ibench.core.table import to_csv, to_json, to_markdown

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    table = audit_table(rows, margin=margin)
    files = {kind: folder / f"audit.{kind}" for kind in ("md", "csv", "json", "png")}
    files["md"].write_text(to_markdown(table) + "\n", encoding="utf-8")
    files["csv"].write_text(to_csv(table), encoding="utf-8")
    files["json"].write_text(json.dumps(to_json(table), indent=2) + "\n", encoding="utf-8")
    plot_audit(rows, files["png"])
    return files
