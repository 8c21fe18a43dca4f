"""`negt2ibench eval-results`: the `.eval_results` YAML parses with huggingface_hub and has exactly the
specification's keys, its values are the ones `report` prints for the same file, bad files and another
evaluator's are refused, the dataset's commit is read from the Hub (or required offline), and the pull
request goes through an `HfApi` double that records what would be sent.

Hand-derived numbers (`_planted`): every image fails except the 4 samples of color_pos1_neg0_000 to
color_pos1_neg0_011 (12 prompts × 4 = 48 images of 19,200). Overall = 100 × 48 / 19,200 = 0.25
exactly, printed as 0.2 by `format(0.25, ".1f")` (ties to even); color's 1:0 setting = 48 / 400 = 12%,
its other 7 settings 0%, so color = 12 / 8 = 1.5; every other category 0.0 (Table 3: a category is
the mean of its 8 settings' accuracies).
"""

from __future__ import annotations

import json
import os

import pytest
import yaml
from huggingface_hub import parse_eval_result_entries

from dataset_builder.benchmark import EVAL_TASKS
from dataset_builder.loading import load_prompts
from evaluator.config import EVALUATOR_VERSION, PRESETS
from evaluator.hub_results import (
    EVAL_RESULTS_PATH,
    dataset_revision,
    eval_result_entries,
    eval_results_yaml,
    open_pull_request,
    scores_of_file,
    task_values,
)
from evaluator.report import TABLE3_COLUMNS
from negt2ibench.cli import main
from negt2ibench.core.errors import UserError
from tests.helpers.hub_helpers import RecordingHfApi, http_error
from tests.helpers.space_helpers import write_results

PLANTED = {f"color_pos1_neg0_{k:03d}" for k in range(12)}
REVISION = "a" * 40
SCORED_AT = 1_796_000_000  # 2026-11-30 00:53:20 UTC: the files' modification time, set below
# An entry's keys in the specification (huggingface/hub-docs@242f4a1, eval_results.yaml and
# docs/hub/eval-results.md): nested ones as "parent.child".
SPEC_KEYS = {"dataset.id", "dataset.task_id", "dataset.revision", "value", "verifyToken", "date"} | {
    "source.url",
    "source.name",
    "source.user",
    "source.org",
    "notes",
}


def entry_keys(entry: dict) -> set[str]:
    return {f"{key}.{inner}" for key, value in entry.items() if isinstance(value, dict) for inner in value} | {
        key for key, value in entry.items() if not isinstance(value, dict)
    }


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def files(prompts, tmp_path_factory):
    root = tmp_path_factory.mktemp("eval_results")
    made = {
        "planted": write_results(root / "planted.jsonl", prompts, "toy", passed=lambda p, s: p.prompt_id in PLANTED),
        # passes depend on prompt and sample: values with decimals in every column
        "mixed": write_results(
            root / "mixed.jsonl", prompts, "toy", passed=lambda p, s: (int(p.prompt_id[-3:]) * 7 + s * 3) % 10 < 3
        ),
        "part": write_results(root / "part.jsonl", prompts[:100], "toy", passed=True),
        "other_model": write_results(root / "other.jsonl", prompts[:10], "other", passed=True),
        "other_config": write_results(root / "cfg.jsonl", prompts[100:110], "toy", passed=True, config_hash="0" * 16),
        "old_evaluator": write_results(root / "old.jsonl", prompts, "toy", passed=True, version="1.0.0"),
        "custom_config": write_results(root / "custom.jsonl", prompts, "toy", passed=True, config_hash="0" * 16),
    }
    # "mixed" as written before records carried `scored_at`: its date comes from the file's time
    lines = made["mixed"].read_text(encoding="utf-8").splitlines()
    made["mixed"].write_text(
        "".join(json.dumps({k: v for k, v in json.loads(line).items() if k != "scored_at"}) + "\n" for line in lines),
        encoding="utf-8",
    )
    for path in made.values():
        os.utime(path, (SCORED_AT, SCORED_AT))
    return made


def run(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exited:
        code = exited.code
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_every_task_publishes_a_ranked_table3_column():
    columns = {column.key: column for column in TABLE3_COLUMNS}
    assert [task.id for task in EVAL_TASKS][0] == "overall"
    assert all(columns[task.column].higher_is_better for task in EVAL_TASKS)


def test_hand_derived_values_and_the_rounding_rule(files):
    scores = scores_of_file([files["planted"]])
    assert scores.values == {
        "overall": 0.2,  # 0.25 exactly: ties to even
        "color": 1.5,
        "material": 0.0,
        "directional": 0.0,
        "proximity": 0.0,
        "comparative": 0.0,
        "depth": 0.0,
    }
    assert scores.numbers["overall"] == 0.25 and scores.numbers["categories"]["color"] == 1.5
    row = {task.column: 1.0 for task in EVAL_TASKS} | {"overall": 14.35, "color": 14.25}
    # 14.35 is stored as 14.3499…, so it prints 14.3; 14.25 is exact, a tie, and goes to the even 14.2.
    assert (task_values(row)["overall"], task_values(row)["color"]) == (14.3, 14.2)
    with pytest.raises(ValueError, match="task 'overall': no value"):
        task_values({"overall": float("nan")})


def _report_row(out: str) -> dict[str, str]:
    """Table 3's printed row of the one model: Markdown label → cell (bold marks removed)."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    header = next(line for line in lines if "**Overall**" in line)
    row = next(line for line in lines if line.startswith("| toy |"))
    labels = [cell.strip().strip("*") for cell in header.strip("|").split("|")]
    cells = [cell.strip().strip("*") for cell in row.strip("|").split("|")]
    return dict(zip(labels, cells, strict=True))


# The date: the records' newest `scored_at` (the tests' fixed moment), or the file's time for records
# without one.
DATES = {
    "planted": ("2026-01-01T00:00:00Z", "the newest record's scored_at"),
    "mixed": ("2026-11-30T00:53:20Z", "the files' last modification"),
}


@pytest.mark.parametrize("name", ["planted", "mixed"])
def test_the_yaml_parses_and_its_values_are_what_report_prints(files, name, tmp_path, capsys):
    out_yaml = tmp_path / "toy.yaml"
    argv = ["eval-results", str(files[name]), "--dataset-id", "org/NegT2IBench", "--out", str(out_yaml)]
    code, printed, _ = run([*argv, "--dataset-revision", REVISION], capsys)
    assert code == 0 and "wrote 7 entries (overall, color, material" in printed
    date, said = DATES[name]
    assert f"date: {date} ({said}" in printed
    entries = parse_eval_result_entries(yaml.safe_load(out_yaml.read_text(encoding="utf-8")))
    assert [e.task_id for e in entries] == [task.id for task in EVAL_TASKS]
    assert {e.dataset_id for e in entries} == {"org/NegT2IBench"}
    assert all("negt2ibench evaluator" in e.notes and "preset current, config" in e.notes for e in entries)
    assert {(e.source_url, e.dataset_revision, e.date) for e in entries} == {(None, REVISION, date)}

    code, report_out, _ = run(["report", str(files[name]), "--out", str(tmp_path / "rep"), "--bootstrap", "0"], capsys)
    assert code == 0
    printed_row = _report_row(report_out)
    labels = {column.key: column.label for column in TABLE3_COLUMNS}
    assert {e.task_id: e.value for e in entries} == {
        task.id: float(printed_row[labels[task.column]]) for task in EVAL_TASKS
    }


def test_printed_yaml_is_pipeable_and_options_reach_every_entry(files, capsys):
    code, out, err = run(
        [
            "eval-results",
            str(files["planted"]),
            "--dataset-id",
            "org/NegT2IBench",
            "--source-url",
            "https://example.org/logs",
            "--dataset-revision",
            REVISION,
        ],
        capsys,
    )
    assert code == 0 and "read 19200 results" in err  # stdout holds only the YAML
    entries = parse_eval_result_entries(yaml.safe_load(out))
    assert {(e.source_url, e.dataset_revision) for e in entries} == {("https://example.org/logs", REVISION)}
    assert f"dataset.revision: {REVISION}\n" in err


def test_the_dataset_commit_is_read_from_the_hub_and_required_offline(files, hub_api, capsys, monkeypatch):
    argv = ["eval-results", str(files["planted"]), "--dataset-id", "org/NegT2IBench"]
    code, _, err = run(argv, capsys)  # the tests run with HF_HUB_OFFLINE=1
    assert code == 2 and "HF_HUB_OFFLINE is set: pass --dataset-revision SHA, the commit of org/NegT2IBench" in err
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    code, out, err = run(argv, capsys)
    assert code == 0 and hub_api.calls == [("dataset_info", {"repo_id": "org/NegT2IBench"})]
    assert {e.dataset_revision for e in parse_eval_result_entries(yaml.safe_load(out))} == {hub_api.sha}
    assert f"dataset.revision: {hub_api.sha} (the current commit of org/NegT2IBench on the Hub)" in err
    hub_api.error = http_error(404, "404 Client Error: Repository Not Found")
    with pytest.raises(UserError, match="could not read the commit of the dataset o/n .*: the Hub answered HTTP 404"):
        dataset_revision("o/n")


def test_another_evaluators_file_is_refused_naming_both_unless_allowed(files, capsys):
    current = PRESETS["current"].config_hash
    for which, theirs in [
        ("old_evaluator", f"negt2ibench evaluator 1.0.0, preset current, config {current}"),
        ("custom_config", f"negt2ibench evaluator {EVALUATOR_VERSION}, a custom configuration, config {'0' * 16}"),
    ]:
        argv = ["eval-results", str(files[which]), "--dataset-id", "org/N", "--dataset-revision", REVISION]
        code, _, err = run(argv, capsys)
        ours = f"negt2ibench evaluator {EVALUATOR_VERSION}, preset current, config {current}"
        assert code == 1 and err.count("\n") == 1
        assert f"model 'toy' was scored by {theirs}, not the benchmark's {ours}" in err
        code, out, _ = run([*argv, "--allow-other-evaluator"], capsys)
        notes = {e.notes for e in parse_eval_result_entries(yaml.safe_load(out))}
        assert code == 0 and len(notes) == 1
        assert notes.pop().endswith(f"not the benchmark's {ours} (allowed by --allow-other-evaluator)")


@pytest.mark.parametrize(
    "which, message",
    [
        ("part", "model 'toy' is incomplete: 400 of 19,200 images scored (2.1%"),
        ("two_models", "the results hold 2 models (other, toy)"),
        ("two_configs", "was scored by different evaluator configurations"),
    ],
)
def test_bad_files_are_refused_as_report_refuses_them(files, which, message, capsys, tmp_path):
    paths = {
        "part": [files["part"]],
        "two_models": [files["planted"], files["other_model"]],
        "two_configs": [files["part"], files["other_config"]],  # other images, another configuration
    }[which]
    code, out, err = run(["eval-results", *map(str, paths), "--dataset-id", "org/NegT2IBench"], capsys)
    assert code == 1 and message in err and err.startswith("error: ") and err.count("\n") == 1
    if which == "two_configs":  # the very line `report` prints for it
        _, _, report_err = run(["report", *map(str, paths), "--out", str(tmp_path / "report")], capsys)
        assert err == report_err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--create-pr"], "--create-pr needs --model-repo"),
        (["--source-url", "ftp://x"], "must be an http(s) address"),
        (["--dataset-revision", "main"], "must be a commit hash"),
        (["--model-repo", "no-slash"], "must look like ORG/NAME"),
    ],
)
def test_usage_errors_exit_2(files, argv, message, capsys):
    code, _, err = run(["eval-results", str(files["planted"]), "--dataset-id", "org/NegT2IBench", *argv], capsys)
    assert code == 2 and message in err


@pytest.fixture
def hub_api(monkeypatch):
    """`huggingface_hub.HfApi` replaced by a recording double (the token is a fake one)."""
    import huggingface_hub

    api = RecordingHfApi()
    made = []
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda token=None: made.append(token) or api)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_test")
    api.made = made
    return api


def test_create_pr_sends_the_yaml_to_the_model_repo(files, hub_api, capsys):
    code, out, _ = run(
        [
            "eval-results",
            str(files["planted"]),
            "--dataset-id",
            "org/NegT2IBench",
            "--model-repo",
            "org/toy-model",
            "--create-pr",
            "--dataset-revision",
            REVISION,
        ],
        capsys,
    )
    assert code == 0
    assert out.rstrip().endswith(
        f"opened a pull request adding {EVAL_RESULTS_PATH} to org/toy-model: "
        "https://huggingface.co/org/toy-model/discussions/1"
    )
    [(name, sent)] = hub_api.calls
    assert name == "create_commit" and hub_api.made == ["hf_test"]
    assert sent["repo_id"] == "org/toy-model" and sent["repo_type"] == "model" and sent["create_pr"] is True
    [(path, content)] = sent["files"].items()
    assert path == ".eval_results/negt2ibench.yaml"
    entries = parse_eval_result_entries(yaml.safe_load(content.decode("utf-8")))
    assert [(e.task_id, e.value) for e in entries][:2] == [("overall", 0.2), ("color", 1.5)]
    assert content.decode("utf-8") in out  # what was sent is what was printed


def test_the_pull_request_fails_in_one_line(files, hub_api, monkeypatch):
    import huggingface_hub

    text = eval_results_yaml(
        eval_result_entries(scores_of_file([files["planted"]]).values, dataset_id="o/n", notes="n")
    )
    hub_api.error = http_error(403, "403 Forbidden: you cannot open pull requests here")
    with pytest.raises(UserError, match=r"could not open a pull request on org/m: the Hub answered HTTP 403"):
        open_pull_request(text, "org/m")
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(UserError, match="no Hugging Face token"):
        open_pull_request(text, "org/m")


def test_entries_carry_exactly_the_specifications_keys(files):
    from huggingface_hub import EvalResultEntry, eval_result_entries_to_yaml

    every_field = EvalResultEntry(
        "d/n", "t", 1, dataset_revision="r", verify_token="v", date="d", source_url="u", source_name="n",
        source_user="s", source_org="o", notes="x",
    )  # fmt: skip
    assert entry_keys(eval_result_entries_to_yaml([every_field])[0]) == SPEC_KEYS  # huggingface_hub's is the spec
    scores = scores_of_file([files["planted"]])
    entries = eval_result_entries(
        scores.values,
        dataset_id="org/N",
        notes="n",
        dataset_revision=REVISION,
        date=scores.date,
        source_url="https://s",
        source_name="S",
    )
    data = yaml.safe_load(eval_results_yaml(entries, title="t"))
    # all of the specification's keys but the Hub's verifyToken and the source's user and org, no other
    ours = frozenset(SPEC_KEYS - {"verifyToken", "source.user", "source.org"})
    assert {frozenset(entry_keys(entry)) for entry in data} == {ours}
    assert data[0] == {
        "dataset": {"id": "org/N", "task_id": "overall", "revision": REVISION},
        "value": 0.2,
        "date": "2026-01-01T00:00:00Z",
        "source": {"url": "https://s", "name": "S"},
        "notes": "n",
    }
    assert len(parse_eval_result_entries(data)) == 7
