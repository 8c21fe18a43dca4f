"""What `negt2ibench report` reads: result files → the records it can report, and what it left out.

The report reports what it can. A line that is not a result record, a torn last line (a killed
writer), the result of an image that is not a benchmark image (a prompt id outside the
benchmark, e.g. a stray `color_pos0_neg1_999_0.png`, or a sample index out of range), a record
that contradicts itself (a failed statement without a cause) and a second, different result for
one image are left out, each named `file:line` with the reason. Error rows (images that could
not be scored) are kept: they lower the model's coverage, and they are named too. Only nothing
left to report, a missing file, or one model scored by different evaluator configurations stops
the report (a number averaging two scorers would be wrong).

This is the report's shell on the file side; the aggregation (`aggregate`) stays pure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.resultio import ResultFileError
from evaluator.results import FrozenResultRecord, ResultRecord, is_error_row, parse_frozen_result
from negt2ibench.core.errors import UserError
from negt2ibench.core.jsonl import parse_jsonl, require_file

from .keys import parse_prompt_id

Key = tuple[str, str, int]


@dataclass(frozen=True)
class InputNote:
    """One line of the inputs that the report left out, or an error row it kept (`where` = file:line)."""

    where: str
    reason: str
    prompt_id: str | None = None
    sample_index: int | None = None

    def __str__(self) -> str:
        image = f" ({self.prompt_id} sample {self.sample_index})" if self.prompt_id is not None else ""
        return f"{self.where}{image}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        """The note as `report.json` lists it.

        Returns:
            Its fields by name (where, why, prompt id, sample index).
        """
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class ReportInputs:
    """The records a report is built from, and what was left out of them.

    Attributes:
        files: the result files read, in order.
        records: one record per image (a scored record replaces an error row of the same image), as
            frozen twins of `ResultRecord` (`evaluator.results.FrozenResultRecord`: every field and
            property, read-only, in a quarter of the memory; `thaw_result` gives a model back).
        left_out: lines not reported, with the reason.
        error_rows: kept records with `error` set (not scored; they lower coverage).
    """

    files: tuple[str, ...]
    records: tuple[FrozenResultRecord, ...]
    left_out: tuple[InputNote, ...] = ()
    error_rows: tuple[InputNote, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """What `report.json` says about its inputs (every note, not a sample).

        Returns:
            The files read, the records kept (a count), and every line left out and error row.
        """
        return {
            "files": list(self.files),
            "records": len(self.records),
            "left_out": [note.to_dict() for note in self.left_out],
            "error_rows": [note.to_dict() for note in self.error_rows],
        }

    def summary_lines(self, show: int = 10) -> list[str]:
        """What the CLI prints: counts, and the first `show` notes of each kind.

        Args:
            show: notes shown of each kind (the rest are counted).

        Returns:
            The lines to print.
        """
        lines = [f"read {len(self.records)} results from {len(self.files)} file(s)"]
        for notes, what in (
            (self.left_out, "line(s) left out of the report"),
            (self.error_rows, "error row(s): images not scored, counted in coverage"),
        ):
            if notes:
                lines.append(f"{len(notes)} {what}:")
                lines += [f"  {note}" for note in notes[:show]]
                if len(notes) > show:
                    lines.append(f"  ... and {len(notes) - show} more (all are listed in report.md and report.json)")
        return lines


def record_problem(record: ResultRecord, expected_samples: int = SAMPLES_PER_PROMPT) -> str | None:
    """Why a well-formed record cannot be reported (not a benchmark image, self-contradictory).

    Args:
        record: a result record that parsed.
        expected_samples: images per prompt the run made.

    Returns:
        The reason, or None when it can be reported.
    """
    try:
        parse_prompt_id(record.prompt_id)
    except ValueError as error:
        return f"not a benchmark image: {error}"
    if not 0 <= record.sample_index < expected_samples:
        return (
            f"sample index {record.sample_index} is outside 0–{expected_samples - 1} "
            f"(pass --samples if the run made more images per prompt)"
        )
    if not is_error_row(record):
        for statement in record.statements:
            if not statement.satisfied and statement.cause is None:
                return f"statement {statement.index} failed without a cause"
    return None


def _where(path: Path, line: int) -> str:
    return f"{path}:{line}"


def read_report_inputs(paths: Iterable[str | Path], *, expected_samples: int = SAMPLES_PER_PROMPT) -> ReportInputs:
    """Read result files for a report, leaving out (and naming) what cannot be reported.

    Torn, malformed and unreportable lines are left out with a note; of two results of one image,
    a scored one replaces an error row, and a second, different scored one is left out.

    Args:
        paths: result files (JSONL).
        expected_samples: images per prompt the run made.

    Returns:
        The files, the records kept (one per image, in key order), the lines left out and the error
        rows, each with where it is.

    Raises:
        UserError: a path that is not a file; one model's results scored by different evaluator
            versions or configurations; or nothing left to report.
    """
    files = [Path(path) for path in paths]
    left_out: list[InputNote] = []
    chosen: dict[Key, tuple[FrozenResultRecord, str]] = {}
    configurations: dict[str, dict[tuple[str, str], str]] = {}  # model → (version, config hash) → first line
    for path in files:
        notes = _read_file(path, expected_samples, chosen, configurations)
        left_out += sorted(notes, key=lambda note: int(note.where.rsplit(":", 1)[1]))  # in line order
    kept = [chosen[key] for key in sorted(chosen)]
    if not kept:
        shown = "; ".join(str(note) for note in left_out[:3])
        raise UserError(
            f"nothing to report in {', '.join(map(str, files))}"
            + (f": {len(left_out)} line(s) left out, e.g. {shown}" if left_out else ": the files hold no results")
        )
    _check_one_configuration_per_model(configurations)
    errors = [InputNote(where, r.error or "", r.prompt_id, r.sample_index) for r, where in kept if is_error_row(r)]
    return ReportInputs(
        files=tuple(map(str, files)),
        records=tuple(record for record, _ in kept),
        left_out=tuple(left_out),
        error_rows=tuple(errors),
    )


def _read_file(
    path: Path,
    expected_samples: int,
    chosen: dict[Key, tuple[FrozenResultRecord, str]],
    configurations: dict[str, dict[tuple[str, str], str]],
) -> list[InputNote]:
    """One result file's lines left out; its reportable records go to CHOSEN, their configurations to CONFIGURATIONS."""
    try:
        require_file(path, kind="result", error=ResultFileError)
    except ResultFileError as error:
        raise UserError(str(error)) from None
    # Frozen twins: validated as ResultRecords are, with their messages, but a quarter of the memory
    # (211,200 ResultRecords took 1.5 GiB, and the kernel's fresh pages for them a third of the report's time).
    contents = parse_jsonl(path.read_bytes(), parse_frozen_result, source=str(path), kind="result", skip_bad=True)
    notes = [InputNote(*_split_note(note)) for note in contents.bad + ([contents.torn] if contents.torn else [])]
    for line, record in zip(contents.lines, contents.records, strict=True):
        where = _where(path, line)
        problem = record_problem(record, expected_samples)
        if problem:
            notes.append(InputNote(where, problem, record.prompt_id, record.sample_index))
            continue
        # Before deduplication: a second configuration of the same images would otherwise be
        # dropped as "another result of this image" and the report would silently show one.
        configurations.setdefault(record.model_key, {}).setdefault(
            (record.evaluator_version, record.config_hash), where
        )
        previous = chosen.get(record.key)
        if previous is None or (is_error_row(previous[0]) and not is_error_row(record)):
            chosen[record.key] = (record, where)  # a scored record replaces an error row (a rerun fixed it)
        elif not is_error_row(previous[0]) and not is_error_row(record) and previous[0] != record:
            reason = f"another result of this image, different, is at {previous[1]} (that one is reported)"
            notes.append(InputNote(where, reason, record.prompt_id, record.sample_index))
    return notes


def _split_note(note: str) -> tuple[str, str]:
    """ "path:line: reason" → ("path:line", "reason") (paths may hold colons; the line is digits)."""
    head, _, reason = note.partition(": ")
    while reason and not head.rsplit(":", 1)[-1].isdigit():
        more, _, reason = reason.partition(": ")
        head = f"{head}: {more}"
    return head, reason


def _check_one_configuration_per_model(configurations: dict[str, dict[tuple[str, str], str]]) -> None:
    """One model key, one (evaluator version, config hash): two configurations of one model (e.g. the
    files of `score --preset current` and `--preset no_sam` over the same images) are refused, never
    averaged together nor one of them dropped. `configurations` maps each model to its configurations
    and the first line of each, in reading order."""
    for model, versions in configurations.items():
        if len(versions) > 1:
            listed = "; ".join(f"evaluator {v} config {h} (e.g. {where})" for (v, h), where in versions.items())
            raise UserError(
                f"model {model!r} was scored by different evaluator configurations: {listed}; "
                f"report each configuration on its own (one file per report), or re-score with one --model-key "
                f"per configuration"
            )
