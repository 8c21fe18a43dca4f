"""NegVQA's questions from a source: a data file, a folder, or a Hub dataset repo (offline when cached).

The plain schema (one row per question; docs/negvqa.md), and the column names each key is read
from, first found first:

    id                 id, index                       (default: the row number)
    image              image, image_path               (see `files.image_data`)
    question           negated_question, question      the negated question, asked as it is
    A, B               A, B                            the two choices
    answer             negated_answer, answer          the correct letter, A or B
    source             source, category                the VQA dataset the question comes from
    domain             domain                          (default: NegVQA's domain of the source)
    original_question  original_question              optional: the affirmative question ...
    original_answer    original_answer                 ... and its letter (both, or neither)

The defaults read NegVQA as its authors write it (add_negation.ipynb: `negated_question`,
`negated_answer`, `original_question`, `original_answer`, `A`, `B`, and VMCBench's `index`,
`category`, `image`), so any of their three files (`NegVQA-7379.jsonl`, `-negated`, `-original`)
gives the negated questions; `--columns KEY=NAME` reads another name. A row that breaks the schema
(a missing or empty field, an answer that is not A or B, half an original, a duplicate id) is
*malformed*: it is left out and listed as ``FILE row N: reason``; the others are read.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import REPO_ID

from .files import DATA_SUFFIXES, Row, describe_columns, fetch_image, missing, read_rows

KEYS = ("id", "image", "question", "A", "B", "answer", "source", "domain", "original_question", "original_answer")
DEFAULT_COLUMNS: Mapping[str, tuple[str, ...]] = {
    "id": ("id", "index"),
    "image": ("image", "image_path"),
    "question": ("negated_question", "question"),
    "A": ("A",),
    "B": ("B",),
    "answer": ("negated_answer", "answer"),
    "source": ("source", "category"),
    "domain": ("domain",),
    "original_question": ("original_question",),
    "original_answer": ("original_answer",),
}
REQUIRED = ("image", "question", "A", "B", "answer", "source")  # `domain` too, unless the source has one
LETTERS = ("A", "B")

# NegVQA's four domains and their 20 source datasets, as its authors group them (VLMEvalKit's
# vmcbench.report_vmc_acc; NegVQA's plot_results.ipynb `category_mapping`; the seed's Table 1 columns).
DOMAINS: Mapping[str, tuple[str, ...]] = {
    "General": ("SEEDBench", "MMStar", "A-OKVQA", "VizWiz", "MMVet", "VQAv2", "OKVQA"),
    "Reasoning": ("MMMU", "MathVista", "ScienceQA", "RealWorldQA", "GQA", "MathVision"),
    "OCR": ("TextVQA", "OCRVQA"),
    "Doc & Chart": ("AI2D", "ChartQA", "DocVQA", "InfoVQA", "TableVQABench"),
}
DOMAIN_OF: Mapping[str, str] = {source: domain for domain, sources in DOMAINS.items() for source in sources}
HUB_IGNORED = ("model_preds/*", ".*")  # the authors' model predictions sit beside the data on the Hub
_ANSWER = re.compile(r"^\(?([AB])\)?[.:]?$")
_SHARD = re.compile(r"-?\d{4,5}(?:-of-\d{5})?$")


@dataclass(frozen=True)
class NegVQAQuestion:
    """One two-choice question (the image read on demand); `prompt_id` and `sample_index` make it
    an image item of the engine (`evaluator.loader.Work`)."""

    question_id: str
    question: str
    choices: tuple[str, str]
    answer: str  # "A" or "B"
    source: str
    domain: str
    fetch: Callable[[], Any]
    label: str  # "FILE row N"
    original_question: str | None = None
    original_answer: str | None = None

    @property
    def prompt_id(self) -> str:
        return self.question_id

    @property
    def sample_index(self) -> int:
        return 0

    @property
    def has_original(self) -> bool:
        return self.original_question is not None


@dataclass
class NegVQAData:
    """The questions of a source, the malformed rows left out (one line each), and the files read."""

    questions: list[NegVQAQuestion]
    malformed: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    source: str = ""


def parse_columns(pairs: Sequence[str]) -> dict[str, str]:
    """``["question=q", ...]`` → ``{"question": "q"}``.

    Args:
        pairs: `--columns`' KEY=NAME pairs.

    Returns:
        Each key's column name.

    Raises:
        UsageError: an unknown key, or a pair without ``=`` or a name.
    """
    mapping: dict[str, str] = {}
    for pair in pairs:
        key, sign, name = pair.partition("=")
        key, name = key.strip(), name.strip()
        if not sign or not name:
            raise UsageError(f"--columns takes KEY=NAME pairs, got {pair!r}")
        if key not in KEYS:
            raise UsageError(f"--columns: unknown key {key!r}; the keys are {', '.join(KEYS)}")
        mapping[key] = name
    return mapping


def _text(value: Any) -> str | None:
    if missing(value) or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return value.strip() or None
    return None


def _letter(value: Any) -> str | None:
    text = _text(value)
    found = _ANSWER.match(text.upper()) if text else None
    return found[1] if found else None


def _cell(row: Row, candidates: Sequence[str]) -> Any:
    return next((row.cells[name] for name in candidates if name in row.cells and not missing(row.cells[name])), None)


def _question(
    row: Row, columns: Mapping[str, tuple[str, ...]], question_id: str, fetch: Callable[[], Any], label: str
) -> NegVQAQuestion | str:
    """The row as a question, or the reason it is malformed."""
    values = {key: _text(_cell(row, names)) for key, names in columns.items() if key not in ("id", "image")}
    if row.image_column is None:
        return f"no image (column {' or '.join(columns['image'])})"
    for key in ("question", "A", "B", "answer", "source"):
        if values[key] is None:
            return f"no {key} (column {' or '.join(columns[key])})"
    answer = _letter(values["answer"])
    if answer is None:
        return f"answer {values['answer']!r} is not A or B"
    source = str(values["source"])
    domain = values["domain"] or DOMAIN_OF.get(source)
    if domain is None:
        return f"no domain, and source {source!r} is none of NegVQA's 20 datasets (give a domain column)"
    original, original_answer = values["original_question"], values["original_answer"]
    if (original is None) != (original_answer is None):
        return "an original question without its answer, or an answer without its question"
    original_letter = _letter(original_answer) if original_answer is not None else None
    if original_answer is not None and original_letter is None:
        return f"original answer {original_answer!r} is not A or B"
    return NegVQAQuestion(
        question_id=question_id,
        question=str(values["question"]),
        choices=(str(values["A"]), str(values["B"])),
        answer=answer,
        source=source,
        domain=domain,
        fetch=fetch,
        label=label,
        original_question=original,
        original_answer=original_letter,
    )


def _check_columns(found: set[str], columns: Mapping[str, tuple[str, ...]], explicit: Mapping[str, str], where: str):
    """A column named with --columns that no row has, or a required key none of whose names any row
    has, is an error for the whole source (not one malformed line per row)."""
    shown = ", ".join(sorted(found)) or "none"
    for key, name in explicit.items():
        if name not in found:
            raise UserError(f"{where}: no column {name!r} (--columns {key}={name}); its columns: {shown}")
    for key in REQUIRED:
        if not found & set(columns[key]):
            names = " or ".join(columns[key])
            raise UserError(
                f"{where}: no {key} column ({names}); its columns: {shown}. Map one with --columns {key}=NAME"
            )


def _shared_images(
    read: Sequence[tuple[Path, str, Row]], questions: list[NegVQAQuestion], fetchers: Mapping[str, Callable[[], Any]]
) -> list[NegVQAQuestion]:
    """QUESTIONS, in order, each whose image cell names another row fetching that row's image."""
    by_row = {question.label: question for question in questions}
    for _, shown, row in read:  # VLMEvalKit: a short image cell is the index of the row holding the image
        question = by_row.get(f"{shown} row {row.number}")
        if question and row.short_image and row.short_image in fetchers and row.short_image != question.question_id:
            by_row[question.label] = replace(question, fetch=fetchers[row.short_image])
    return [by_row[question.label] for question in questions]


def questions_from_files(
    files: Sequence[Path], *, root: Path | None = None, columns: Mapping[str, str] | None = None, source: str = ""
) -> NegVQAData:
    """The questions of FILES (rows in file order), names shown relative to ROOT.

    Rows that cannot be read, lack a field or repeat an id are left out and listed as malformed.

    Args:
        files: data files (.jsonl, .tsv, .parquet).
        root: the folder names are shown relative to.
        columns: column names given with `--columns` (the others: the defaults).
        source: how the source is named (default: the files).

    Returns:
        The questions, the malformed rows (in file and row order), the files and the source.

    Raises:
        UserError: a file that cannot be read, or a column named with `--columns` or a required
            field that no row has.
    """
    explicit = dict(columns or {})
    mapping = {key: (explicit[key],) if key in explicit else names for key, names in DEFAULT_COLUMNS.items()}
    malformed: list[tuple[int, int, str]] = []  # (file, row, line): listed in file and row order
    read: list[tuple[Path, str, Row]] = []
    found: set[str] = set()
    for place, path in enumerate(files):
        shown = str(path.relative_to(root)) if root is not None and path.is_relative_to(root) else str(path)
        bad: list[tuple[int, str]] = []
        rows = read_rows(path, mapping["image"], bad)
        found.update(describe_columns(rows))
        malformed += [(place, number, f"{shown} row {number}: {reason}") for number, reason in bad]
        read += [(path, shown, row) for row in rows]
    place_of = {str(path): place for place, path in enumerate(files)}
    _check_columns(found, mapping, explicit, source or ", ".join(str(path) for path in files))
    several = len(files) > 1
    ids: dict[str, str] = {}  # question id → where it was first seen
    fetchers: dict[str, Callable[[], Any]] = {}
    questions: list[NegVQAQuestion] = []
    for path, shown, row in read:
        label = f"{shown} row {row.number}"
        given = _text(_cell(row, mapping["id"]))
        question_id = given or (f"{path.stem}:{row.number}" if several else str(row.number))
        if question_id in ids:
            line = f"{label}: duplicate id {question_id!r} (first at {ids[question_id]})"
            malformed.append((place_of[str(path)], row.number, line))
            continue
        fetch = partial(fetch_image, row.image, path.parent)
        parsed = _question(row, mapping, question_id, fetch, label)
        if isinstance(parsed, str):
            malformed.append((place_of[str(path)], row.number, f"{label}: {parsed}"))
            continue
        ids[question_id] = label
        fetchers[question_id] = fetch
        questions.append(parsed)
    ordered = _shared_images(read, questions, fetchers)
    listed = [line for *_, line in sorted(malformed)]
    return NegVQAData(ordered, listed, [str(path) for path in files], source or ", ".join(map(str, files)))


def _shard_group(path: Path) -> tuple[Path, str]:
    return (path.parent, _SHARD.sub("", path.stem))


def data_files(root: Path, pattern: str | None = None) -> list[Path]:
    """The data files of a folder.

    Those matching PATTERN (a glob from ROOT), else its one data file, or the parquet shards of its
    one split; the authors' `model_preds/` and hidden files are not data.

    Args:
        root: the folder.
        pattern: `--data-file`'s glob.

    Returns:
        The files, sorted.

    Raises:
        UserError: no data file (matching PATTERN), or several without a PATTERN.
    """
    if pattern:
        matched = sorted(p for p in root.glob(pattern) if p.is_file() and p.suffix.lower() in DATA_SUFFIXES)
        if not matched:
            raise UserError(f"{root}: no data file ({', '.join(DATA_SUFFIXES)}) matches --data-file {pattern!r}")
        return matched
    candidates = sorted(
        path
        for path in root.rglob("*")
        if path.is_file()
        and path.suffix.lower() in DATA_SUFFIXES
        and not any(part.startswith(".") or part == "model_preds" for part in path.relative_to(root).parts)
    )
    if not candidates:
        raise UserError(f"{root} holds no data file ({', '.join(DATA_SUFFIXES)})")
    if len(candidates) == 1:
        return candidates
    if all(path.suffix.lower() == ".parquet" for path in candidates) and len(set(map(_shard_group, candidates))) == 1:
        return candidates
    names = ", ".join(str(path.relative_to(root)) for path in candidates[:8]) + (" ..." if len(candidates) > 8 else "")
    raise UserError(f"{root} holds several data files ({names}): choose with --data-file NAME (a glob is fine)")


def hub_folder(repo_id: str, pattern: str | None = None) -> Path:
    """The local snapshot of a Hub dataset repo's data files.

    The Hugging Face cache; offline, the cached one.

    Args:
        repo_id: the dataset's repo id.
        pattern: `--data-file`'s glob (default: every data file).

    Returns:
        The snapshot's folder.

    Raises:
        UserError: the repo is not cached offline, not found (or private, gated), or cannot be read,
            saying how to get it.
    """
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled, RepositoryNotFoundError

    allow = [pattern] if pattern else [f"*{suffix}" for suffix in DATA_SUFFIXES]
    how = (
        f"Run `hf download --repo-type dataset {repo_id}` on a machine with internet access and copy its Hugging "
        "Face cache here (set HF_HUB_CACHE to it), or pass a local file or folder to --data"
    )
    try:
        return Path(
            snapshot_download(repo_id, repo_type="dataset", allow_patterns=allow, ignore_patterns=list(HUB_IGNORED))
        )
    except (LocalEntryNotFoundError, OfflineModeIsEnabled):
        missing = f"the Hub dataset {repo_id} is not in the Hugging Face cache and the Hub is out of reach"
        raise UserError(f"{missing}. {how}") from None
    except RepositoryNotFoundError:
        raise UserError(f"no Hub dataset {repo_id} (or it is private or gated: `hf auth login`)") from None
    except Exception as error:  # noqa: BLE001 - network and server errors: one line whatever the kind
        detail = str(error).strip().split(". ")[0].splitlines()[0] if str(error).strip() else type(error).__name__
        raise UserError(f"cannot read the Hub dataset {repo_id} ({detail}). {how}") from None


def read_questions(
    data: str | Path, *, columns: Mapping[str, str] | None = None, data_file: str | None = None
) -> NegVQAData:
    """The questions of SRC: a data file (.jsonl, .tsv, .parquet), a folder, or a Hub dataset repo id.

    Args:
        data: the file, folder or repo id.
        columns: column names given with `--columns`.
        data_file: `--data-file`'s glob inside a folder or repo.

    Returns:
        The questions and the malformed rows.

    Raises:
        UserError: a source that is none of these or cannot be read, or `data_file` with a file.
    """
    path = Path(data)
    if path.is_file():
        if data_file:
            raise UserError("--data-file chooses a file inside a folder or a Hub repo; --data is already a file")
        return questions_from_files([path], columns=columns, source=str(path))
    if path.is_dir():
        return questions_from_files(data_files(path, data_file), root=path, columns=columns, source=str(path))
    if path.exists():
        raise UserError(f"{path} is neither a data file nor a folder")
    if REPO_ID.match(str(data)):
        root = hub_folder(str(data), data_file)
        return questions_from_files(data_files(root, data_file), root=root, columns=columns, source=str(data))
    raise UserError(f"no such data file, folder or Hub dataset: {data}")
