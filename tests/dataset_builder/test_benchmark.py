"""`eval.yaml`: what `build` writes, that it round-trips, and what `validate` finds wrong with it.

The specification checked against is `docs/hub/eval-results.md` of huggingface/hub-docs ("Eval.yaml
specification"): `name`, `description`, `evaluation_framework`, `tasks[]` with a unique `id` and an
optional `config` (default: the dataset's default config) and `split` (default: `test`).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dataset_builder import hub
from dataset_builder.benchmark import (
    EVAL_TASKS,
    EVALUATION_FRAMEWORK,
    card_configs,
    eval_config,
    eval_yaml_check,
    eval_yaml_problems,
    render_eval_yaml,
)
from dataset_builder.corpus import build_corpus
from dataset_builder.validate import validate_folder


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return hub.write_dataset_folder(build_corpus(), tmp_path_factory.mktemp("bench") / "ds")


def _edit(folder: Path, change) -> None:
    data = yaml.safe_load((folder / "eval.yaml").read_text(encoding="utf-8"))
    change(data)
    (folder / "eval.yaml").write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _copy(built: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "copy"
    folder.mkdir()
    for name in ("README.md", "eval.yaml"):
        (folder / name).write_bytes((built / name).read_bytes())
    return folder


def test_build_writes_the_specification_fields_and_it_round_trips(built):
    text = (built / "eval.yaml").read_text(encoding="utf-8")
    assert text == render_eval_yaml()  # the same bytes on every build
    data = yaml.safe_load(text)
    assert data == eval_config()
    assert list(data) == ["name", "description", "evaluation_framework", "tasks"]
    assert data["name"] == "NegT2IBench" and data["evaluation_framework"] == EVALUATION_FRAMEWORK
    assert "4,800 prompts" in data["description"] and "Elfatairy" in data["description"]
    # Overall first (the Hub shows the first task by default), then one task per category, all on
    # the card's prompts config, test split; only the fields the specification defines.
    assert [task["id"] for task in data["tasks"]] == [
        "overall",
        "color",
        "material",
        "directional",
        "proximity",
        "comparative",
        "depth",
    ]
    assert all(task == {"id": task["id"], "config": "prompts", "split": "test"} for task in data["tasks"])
    assert eval_yaml_check(built) == []


def test_the_card_declares_every_task_config_and_split(built):
    configs, default = card_configs((built / "README.md").read_text(encoding="utf-8"))
    assert configs == {"prompts": {"test"}} and default == "prompts"
    assert all(task.split in configs[task.config] for task in EVAL_TASKS)


def test_validate_finds_a_planted_missing_split_and_config(built, tmp_path):
    folder = _copy(built, tmp_path)

    def plant(data):
        data["tasks"][1]["split"] = "train"
        data["tasks"][2]["config"] = "images"

    _edit(folder, plant)
    assert eval_yaml_check(folder) == [
        "task 'color': config 'prompts' has no split 'train' in README.md (found: test)",
        "task 'material': config 'images' is not in README.md's configs (found: prompts)",
    ]
    # As `validate` says it, through the whole folder check.
    full = hub.write_dataset_folder(build_corpus(), tmp_path / "full")
    _edit(full, plant)
    _, violations = validate_folder(full)
    assert [str(v) for v in violations] == [
        "eval.yaml: task 'color': config 'prompts' has no split 'train' in README.md (found: test)",
        "eval.yaml: task 'material': config 'images' is not in README.md's configs (found: prompts)",
    ]


def test_defaults_follow_the_specification():
    configs = {"prompts": {"test"}, "images": {"sd_1_5"}}
    base = {"name": "n", "description": "d", "evaluation_framework": EVALUATION_FRAMEWORK}
    tasks = [{"id": task.id} for task in EVAL_TASKS]  # no config, no split: the default config's test split
    assert eval_yaml_problems({**base, "tasks": tasks}, configs, "prompts") == []
    assert eval_yaml_problems({**base, "tasks": tasks[:1] + tasks[2:]}, configs, None)[0] == (
        "task 'overall' names no config and README.md marks none as default"
    )


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda d: d.pop("name"), "`name` is missing or empty"),
        (lambda d: d.update(evaluation_framework="inspect-ai"), "`evaluation_framework` is 'inspect-ai'"),
        (lambda d: d.update(tasks=[]), "`tasks` is missing or empty"),
        (lambda d: d["tasks"].append({"id": "overall", "config": "prompts"}), "task id 'overall' occurs twice"),
        (lambda d: d["tasks"].pop(), "this code publishes overall, color"),
        (lambda d: d["tasks"].__setitem__(0, {"config": "prompts"}), "task 1 has no `id`"),
    ],
)
def test_each_broken_field_is_named(built, tmp_path, change, problem):
    folder = _copy(built, tmp_path)
    _edit(folder, change)
    problems = eval_yaml_check(folder)
    assert any(problem in p for p in problems), problems


def test_a_missing_or_unreadable_file_is_one_problem(built, tmp_path):
    folder = _copy(built, tmp_path)
    (folder / "eval.yaml").unlink()
    assert eval_yaml_check(folder) == ["missing; rebuild the folder with `build --overwrite` (push writes it too)"]
    (folder / "eval.yaml").write_text("tasks: [unclosed\n", encoding="utf-8")
    [problem] = eval_yaml_check(folder)
    assert problem.startswith("unreadable: ")
    (folder / "eval.yaml").write_text("- just a list\n", encoding="utf-8")
    assert eval_yaml_check(folder) == ["is not a YAML mapping with name, description, evaluation_framework and tasks"]


class _RecordingApi:
    """An HfApi double: records what a push would send."""

    calls: list = []

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kwargs):
        _RecordingApi.calls.append(("create_repo", repo_id))

    def upload_folder(self, **kwargs):
        _RecordingApi.calls.append(("upload_folder", kwargs))


def test_push_uploads_eval_yaml_and_writes_it_into_an_older_folder(tmp_path, monkeypatch):
    import huggingface_hub

    _RecordingApi.calls = []
    monkeypatch.setattr(huggingface_hub, "HfApi", _RecordingApi)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_test")
    folder = hub.write_dataset_folder(build_corpus(), tmp_path / "ds")
    (folder / "eval.yaml").unlink()  # a folder built before eval.yaml existed
    assert "eval.yaml" in hub.push_dataset(folder, "org/negt2ibench", dry_run=True)
    assert not (folder / "eval.yaml").exists()  # a dry run writes nothing
    paths = hub.push_dataset(folder, "org/negt2ibench")
    (_, upload_args) = _RecordingApi.calls[-1]
    assert "eval.yaml" in paths and upload_args["allow_patterns"] == paths
    assert (folder / "eval.yaml").read_text(encoding="utf-8") == render_eval_yaml()
