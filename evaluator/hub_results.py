"""A model's NegT2IBench scores as the Hub's `.eval_results/*.yaml`, and the pull request that adds them.

One entry per task of `eval.yaml` (`dataset_builder.benchmark.EVAL_TASKS`, the one list), each
through huggingface_hub's `EvalResultEntry` and `eval_result_entries_to_yaml`. A task's value is
the number `negt2ibench report` prints for its Table 3 column, read back from that text
(`task_values`): the report's aggregation (`evaluator.report.table3`), and the report's rounding,
one decimal by Python's `format(value, ".1f")` (the nearest tenth of the float's exact binary
value, ties to even: 14.25 → 14.2, 14.35 → 14.3 because 14.35 is stored as 14.3499…).

An entry carries exactly the fields of the specification on huggingface/hub-docs' main
(`docs/hub/eval-results.md` and `eval_results.yaml`, read at commit 242f4a1), as huggingface_hub's
`eval_result_entries_to_yaml` writes them:
`dataset.id`, `dataset.task_id`, `dataset.revision` (the benchmark dataset's commit), `value`,
`date` (when the results were scored), `source` (`url`, `name`) when there is one, and `notes`
(the evaluator version, preset and config hash). No `evaluation_framework`: that key belongs to
`eval.yaml`, not to a result (the text asking for it exists only on an unmerged hub-docs branch).

A results file is refused the way `report` refuses one (`read_report_inputs`: a model scored by
different configurations, nothing to report), and also when it holds several models or misses
images: a Hub score is a whole-benchmark number of one model (`report` marks such a row †). It is
refused too when another evaluator version or configuration than the benchmark's (`BENCHMARK_PRESET`)
scored it (`other_evaluator`), unless the caller allows it, and then the notes say so.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dataset_builder.benchmark import EVAL_TASKS, EVALUATION_FRAMEWORK
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from negt2ibench.core.errors import UsageError, UserError

from .config import EVALUATOR_VERSION, PRESETS
from .report.numbers import Table3Numbers
from .report.tables import TABLE3_COLUMNS

if TYPE_CHECKING:
    from huggingface_hub import EvalResultEntry, HfApi

    from .results import ResultRecord

EVAL_RESULTS_PATH = ".eval_results/negt2ibench.yaml"  # where the file goes in a model repo
ROUNDING = (
    "one decimal, as `negt2ibench report` prints it (Python's format(value, '.1f'): the nearest tenth of "
    "the float's binary value, ties to even)"
)
_COLUMNS = {column.key: column for column in TABLE3_COLUMNS}
BENCHMARK_PRESET = "current"  # the configuration whose numbers are the benchmark's (the leaderboard's too)


def task_values(numbers: Mapping[str, Any]) -> dict[str, float]:
    """{task id: value} for every `EVAL_TASKS` task, from one model's Table 3 numbers: a flat row
    (`evaluator.report.leaderboard_row`, a stored leaderboard entry's `row`) or `table3()`'s dict
    (`categories` nested). Each value is the column's text as `report` prints it, as a float."""
    flat = {**numbers, **numbers.get("categories", {})}
    values = {}
    for task in EVAL_TASKS:
        raw = flat.get(task.column)
        if not isinstance(raw, (int, float)) or isinstance(raw, bool) or math.isnan(raw):
            raise ValueError(f"task {task.id!r}: no value in column {task.column!r} (got {raw!r})")
        values[task.id] = float(_COLUMNS[task.column].text(float(raw)))
    return values


def preset_of(config_hash: str) -> str | None:
    """The name of the preset whose configuration has this hash (None: a custom configuration)."""
    return next((name for name, config in PRESETS.items() if config.config_hash == config_hash), None)


def iso_time(seconds: float) -> str:
    """Epoch SECONDS as the ISO-8601 UTC datetime an entry's `date` holds (`2026-12-03T17:19:00Z`)."""
    return datetime.fromtimestamp(seconds, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def other_evaluator(evaluator_version: str, config_hash: str) -> str:
    """Why numbers from this evaluator version and config are not the benchmark's ("" when they are)."""
    benchmark = PRESETS[BENCHMARK_PRESET]
    if evaluator_version == EVALUATOR_VERSION and config_hash == benchmark.config_hash:
        return ""
    return (
        f"scored by {scorer_note(evaluator_version, config_hash)}, not the benchmark's "
        f"{scorer_note(EVALUATOR_VERSION, benchmark.config_hash)}"
    )


def scorer_note(evaluator_version: str, config_hash: str) -> str:
    """Which scorer made the numbers: the framework, evaluator version, preset and config hash."""
    preset = preset_of(config_hash)
    return (
        f"{EVALUATION_FRAMEWORK} evaluator {evaluator_version}, "
        f"{f'preset {preset}' if preset else 'a custom configuration'}, config {config_hash}"
    )


def eval_result_entries(
    values: Mapping[str, float],
    *,
    dataset_id: str,
    notes: str,
    dataset_revision: str | None = None,
    date: str | None = None,
    source_url: str | None = None,
    source_name: str | None = None,
) -> list[EvalResultEntry]:
    """One `EvalResultEntry` per `EVAL_TASKS` task, in its order, with VALUES[task id]."""
    from huggingface_hub import EvalResultEntry

    return [
        EvalResultEntry(
            dataset_id=dataset_id,
            task_id=task.id,
            value=values[task.id],
            dataset_revision=dataset_revision,
            date=date,
            source_url=source_url,
            source_name=source_name if source_url else None,
            notes=notes,
        )
        for task in EVAL_TASKS
    ]


def eval_results_yaml(entries: Sequence[EvalResultEntry], *, title: str = "") -> str:
    """The `.eval_results` file: `eval_result_entries_to_yaml(entries)` as YAML, under a comment
    (TITLE, and what the values are)."""
    import yaml
    from huggingface_hub import eval_result_entries_to_yaml

    header = [f"# {line}" for line in title.splitlines()] + [
        "# Values: % of images passing every statement of their prompt (Table 3 of the paper),",
        f"# {ROUNDING}.",
    ]
    serialized = eval_result_entries_to_yaml(list(entries))
    body = yaml.safe_dump(serialized, sort_keys=False, allow_unicode=True, width=1000)
    return "\n".join(header) + "\n" + body


# --------------------------------------------------------------------------- a results file


@dataclass(frozen=True)
class FileScores:
    """One model's Table 3 numbers from a results file, ready to publish."""

    model_key: str
    values: dict[str, float]  # task id -> value
    numbers: Table3Numbers  # `table3()`'s numbers of the model
    provenance: dict[str, str]  # evaluator_version, config_hash
    notes_read: tuple[str, ...]  # what the report's reader says (read, left out, error rows)
    scored_at: str  # ISO 8601 UTC: when the last record was scored (its `scored_at`; see `date_from`)
    date_from: str  # "records", or "file times" for records written before they carried `scored_at`
    other_evaluator: str = ""  # why these are not the benchmark's evaluator's numbers ("" when they are)

    @property
    def notes(self) -> str:
        images = f"{self.numbers['images']:,} of {self.numbers['expected_images']:,} images scored"
        other = f"; {self.other_evaluator} (allowed by --allow-other-evaluator)" if self.other_evaluator else ""
        return f"{scorer_note(**self.provenance)}; {images}{other}"

    @property
    def date(self) -> str:
        return self.scored_at


def scores_of_file(
    paths: Iterable[str | Path], *, expected_samples: int = SAMPLES_PER_PROMPT, allow_other_evaluator: bool = False
) -> FileScores:
    """Read results files as `report` does and compute the model's task values.

    Raises:
        UserError: what `report` refuses (a model scored by different configurations, nothing to
            report), several models, missing images (with the count, as `report`'s † note), or an
            evaluator version or configuration other than the benchmark's unless `allow_other_evaluator`."""
    from .report import model_provenance, read_report_inputs, table3

    paths = list(paths)
    inputs = read_report_inputs(paths, expected_samples=expected_samples)
    try:
        by_model = table3(list(inputs.records), expected_samples)
    except ValueError as error:
        raise UserError(str(error)) from None
    if len(by_model) != 1:
        raise UserError(
            f"the results hold {len(by_model)} models ({', '.join(sorted(by_model))}); "
            "an .eval_results file is one model's: pass one model's results"
        )
    ((model, numbers),) = by_model.items()
    if not numbers["complete"]:
        raise UserError(
            f"model {model!r} is incomplete: {numbers['images']:,} of {numbers['expected_images']:,} images "
            f"scored ({numbers['coverage']:.1f}%; {numbers['errors']:,} error rows); a Hub score needs every "
            "image: score the missing ones (`negt2ibench score` resumes) and try again"
        )
    records = [record for record in inputs.records if record.model_key == model]
    provenance = model_provenance(records)
    other = other_evaluator(**provenance)
    if other and not allow_other_evaluator:
        raise UserError(
            f"model {model!r} was {other}: the Hub's leaderboard ranks one scorer's numbers; re-score with "
            f"`negt2ibench score --preset {BENCHMARK_PRESET}` (or pass --allow-other-evaluator: the notes say so)"
        )
    return FileScores(
        model_key=model,
        values=task_values(numbers),
        numbers=numbers,
        provenance=provenance,
        notes_read=tuple(inputs.summary_lines()),
        **_scored_at(records, paths),
        other_evaluator=other,
    )


def _scored_at(records: Sequence[ResultRecord], paths: Sequence[str | Path]) -> dict[str, str]:
    """When the results were scored: the newest record's `scored_at` (ISO strings of one format sort
    as times); for records written before the field existed, the files' newest modification time."""
    stamps = [record.scored_at for record in records if record.scored_at]
    if stamps:
        return {"scored_at": max(stamps), "date_from": "records"}
    return {"scored_at": iso_time(max(os.stat(path).st_mtime for path in paths)), "date_from": "file times"}


def dataset_revision(dataset_id: str, *, api: Any = None) -> str:
    """The benchmark dataset's current commit on the Hub (`HfApi.dataset_info(...).sha`). Offline, a
    `UsageError` asking for the commit; the Hub's refusal or no connection, one `UserError` line."""
    from huggingface_hub import constants

    from dataset_builder.hub import hub_errors

    if api is None and constants.is_offline_mode():
        raise UsageError(
            f"HF_HUB_OFFLINE is set: pass --dataset-revision SHA, the commit of {dataset_id} the prompts came from"
        )
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi()
    with hub_errors(f"read the commit of the dataset {dataset_id} (or pass --dataset-revision SHA)"):
        sha = api.dataset_info(dataset_id).sha
    if not sha:
        raise UserError(f"the Hub gave no commit for the dataset {dataset_id}; pass --dataset-revision SHA")
    return str(sha)


# --------------------------------------------------------------------------- the pull request


def open_pull_request(
    yaml_text: str,
    model_repo: str,
    *,
    api: HfApi | None = None,
    description: str = "",
) -> str:
    """Open a pull request on MODEL_REPO that adds `EVAL_RESULTS_PATH` (`HfApi.create_commit(...,
    create_pr=True)`); its URL. The token comes from the usual place (`hf auth login`, HF_TOKEN)
    unless API is given; Hub errors are one `UserError` line."""
    from dataset_builder.hub import hub_errors, require_token

    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=require_token("open the pull request"))
    from huggingface_hub import CommitOperationAdd

    with hub_errors(f"open a pull request on {model_repo}"):
        commit = api.create_commit(
            repo_id=model_repo,
            repo_type="model",
            operations=[CommitOperationAdd(path_in_repo=EVAL_RESULTS_PATH, path_or_fileobj=yaml_text.encode("utf-8"))],
            commit_message="Add NegT2IBench evaluation results",
            commit_description=description or None,
            create_pr=True,
        )
    url = getattr(commit, "pr_url", None)
    if not url:
        raise UserError(f"the Hub made a commit on {model_repo} but returned no pull request URL")
    return str(url)
