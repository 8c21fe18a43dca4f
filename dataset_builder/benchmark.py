"""The dataset as a Hub *Benchmark*: `eval.yaml` at the folder's root, and its check against the card.

The Hub's specification (`docs/hub/eval-results.md` in huggingface/hub-docs, "Eval.yaml
specification") asks for `name`, `description`, `evaluation_framework` and `tasks[]`, each task an
`id` (unique; "a single benchmark can define several tasks, each producing its own leaderboard")
with an optional `config` (default: the dataset's default config) and `split` (default: `test`).
It says nothing against several tasks on one config and split, and `EvalResultEntry` (huggingface_hub
2.4) names a task by `dataset_id` + `task_id` only, so each of our tasks reads the same `prompts`
config's `test` split and publishes another number of Table 3 (`EvalTask.column`): `overall` first
(the Hub shows a benchmark's first task unless asked for another), then one task per category.

`EVAL_TASKS` is the one list of what we publish: `build` writes it, `validate` checks it, and
`negt2ibench eval-results` and the Space write one `.eval_results` entry per task
(`evaluator.hub_results`). Pure data and text: no network.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from negt2ibench.core.atomic import write_atomic

from .layout import CARD_FILE, EVAL_FILE, PROMPTS_DIR
from .vocabulary import CATEGORIES, PROMPTS_PER_SETTING, SAMPLES_PER_PROMPT, SETTINGS

# The framework identifier of `eval.yaml`. The Hub keeps the allowed identifiers in huggingface.js
# (`packages/tasks/src/eval.ts`, EVALUATION_FRAMEWORKS): ours has to be added there (docs/hub.md).
EVALUATION_FRAMEWORK = "negt2ibench"
BENCHMARK_NAME = "NegT2IBench"
PROMPTS_CONFIG = PROMPTS_DIR  # the card's config of the prompts ...
PROMPTS_SPLIT = "test"  # ... and its one split
DEFAULT_SPLIT = "test"  # a task's split when it names none (the Hub's default)


@dataclass(frozen=True)
class EvalTask:
    """One task (one Hub leaderboard) of the benchmark: `id`, the card's `config` and `split` it is
    evaluated on, and `column`, the key of the Table 3 column whose value it publishes."""

    id: str
    column: str
    config: str = PROMPTS_CONFIG
    split: str = PROMPTS_SPLIT

    def to_yaml(self) -> dict[str, str]:
        return {"id": self.id, "config": self.config, "split": self.split}


EVAL_TASKS: tuple[EvalTask, ...] = (
    EvalTask("overall", "overall"),
    *(EvalTask(category, category) for category in CATEGORIES),
)

_IMAGES = len(CATEGORIES) * len(SETTINGS) * PROMPTS_PER_SETTING * SAMPLES_PER_PROMPT
DESCRIPTION = (
    'NegT2IBench measures whether text-to-image models withhold what a prompt forbids ("a photo of a '
    f'non-red cup", "the dog is not left of the bench"): {len(CATEGORIES) * len(SETTINGS) * PROMPTS_PER_SETTING:,} '
    f"prompts in {len(CATEGORIES)} categories ({', '.join(CATEGORIES)}) x {len(SETTINGS)} settings of "
    f"positive and negated statements. A model makes {SAMPLES_PER_PROMPT} images per prompt "
    f"({_IMAGES:,} in all); a detector-based scorer (RF-DETR, SAM 2.1, SigLIP 2, Depth-Anything V2 and "
    "geometric rules) checks every statement, and a score is the % of images satisfying every statement "
    "of their prompt: task `overall` over all images, one task per category (the mean of its 8 "
    "settings), as Table 3 of the paper. Paper: Elfatairy, Bravo, Bader, Akata (2026), NegT2IBench: "
    "When Negation Changes the Picture. A Polarity Benchmark for Text-to-Image Models."
)
_HEADER = (
    "# The Hub's benchmark definition of this dataset (https://huggingface.co/docs/hub/eval-results),\n"
    "# written by `negt2ibench build`; `negt2ibench validate` checks it against README.md's configs.\n"
)


def eval_config() -> dict[str, Any]:
    """`eval.yaml` as data, in the specification's field order."""
    return {
        "name": BENCHMARK_NAME,
        "description": DESCRIPTION,
        "evaluation_framework": EVALUATION_FRAMEWORK,
        "tasks": [task.to_yaml() for task in EVAL_TASKS],
    }


def render_eval_yaml() -> str:
    """The text of `eval.yaml` (the same bytes on every build)."""
    import yaml

    body = yaml.safe_dump(eval_config(), sort_keys=False, allow_unicode=True, width=100)
    return _HEADER + body


def write_eval_yaml(dataset_dir: str | Path) -> Path:
    """Write `DIR/eval.yaml` (atomically)."""
    return write_atomic(Path(dataset_dir) / EVAL_FILE, render_eval_yaml())


# --------------------------------------------------------------------------- checking


def read_yaml_file(path: Path) -> Any:
    """A YAML file's data; a ValueError that says why when it cannot be read."""
    import yaml

    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise ValueError(f"unreadable: {str(error).splitlines()[0]}") from None


def card_configs(card_text: str) -> tuple[dict[str, set[str]], str | None]:
    """({config name: its splits}, the default config) declared by a dataset card's YAML `configs`.

    The default config is the one marked `default: true`, else one named `default` (the `datasets`
    convention). A card without a readable YAML block declares nothing."""
    import yaml

    if not card_text.startswith("---\n"):
        return {}, None
    block, marker, _ = card_text[4:].partition("\n---")
    try:
        data = yaml.safe_load(block) if marker else None
    except yaml.YAMLError:
        return {}, None
    configs: dict[str, set[str]] = {}
    default = None
    for config in (data or {}).get("configs") or []:
        if not isinstance(config, dict) or not isinstance(config.get("config_name"), str):
            continue
        name = config["config_name"]
        files = config.get("data_files") or []
        configs[name] = {f["split"] for f in files if isinstance(f, dict) and isinstance(f.get("split"), str)}
        if config.get("default") is True:
            default = name
    if default is None and "default" in configs:
        default = "default"
    return configs, default


def eval_yaml_problems(data: Any, configs: dict[str, set[str]], default_config: str | None) -> list[str]:
    """What is wrong with `eval.yaml`'s data against the card's configs ([] when nothing): the
    specification's fields, unique task ids, every task's config and split declared by the card,
    and the tasks this code publishes (`EVAL_TASKS`)."""
    if not isinstance(data, dict):
        return ["is not a YAML mapping with name, description, evaluation_framework and tasks"]
    problems = []
    for key in ("name", "description", "evaluation_framework"):
        if not isinstance(data.get(key), str) or not data[key].strip():
            problems.append(f"`{key}` is missing or empty")
    if data.get("evaluation_framework") not in (None, EVALUATION_FRAMEWORK):
        problems.append(f"`evaluation_framework` is {data['evaluation_framework']!r}, not {EVALUATION_FRAMEWORK!r}")
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not tasks:
        return problems + ["`tasks` is missing or empty"]
    if not configs:  # one line, not one per task
        return problems + [f"{CARD_FILE} declares no `configs`: no task's config and split can be found"]
    seen: set[str] = set()
    for number, task in enumerate(tasks):
        if not isinstance(task, dict) or not isinstance(task.get("id"), str) or not task["id"]:
            problems.append(f"task {number + 1} has no `id`")
            continue
        task_id = task["id"]
        if task_id in seen:
            problems.append(f"task id {task_id!r} occurs twice")
        seen.add(task_id)
        config = task.get("config", default_config)
        split = task.get("split", DEFAULT_SPLIT)
        if config is None:
            problems.append(f"task {task_id!r} names no config and {CARD_FILE} marks none as default")
        elif config not in configs:
            found = ", ".join(sorted(configs)) or "none"
            problems.append(f"task {task_id!r}: config {config!r} is not in {CARD_FILE}'s configs (found: {found})")
        elif split not in configs[config]:
            found = ", ".join(sorted(configs[config])) or "none"
            problems.append(
                f"task {task_id!r}: config {config!r} has no split {split!r} in {CARD_FILE} (found: {found})"
            )
    expected = [task.id for task in EVAL_TASKS]
    found_ids = [task.get("id") for task in tasks if isinstance(task, dict)]
    if found_ids != expected:
        problems.append(
            f"its tasks are {', '.join(map(str, found_ids))}; this code publishes {', '.join(expected)} "
            "(rebuild with `build --overwrite`)"
        )
    return problems


def eval_yaml_check(dataset_dir: str | Path) -> list[str]:
    """The problems of `DIR/eval.yaml` against `DIR/README.md` ([] when it is right)."""
    root = Path(dataset_dir)
    path = root / EVAL_FILE
    if not path.is_file():
        return ["missing; rebuild the folder with `build --overwrite` (push writes it too)"]
    try:
        data = read_yaml_file(path)
    except ValueError as error:
        return [str(error)]
    card = root / CARD_FILE
    text = card.read_text(encoding="utf-8") if card.is_file() else ""
    configs, default = card_configs(text)
    return eval_yaml_problems(data, configs, default)
