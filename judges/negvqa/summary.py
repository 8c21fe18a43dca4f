"""`negt2ibench negvqa summary`: NegVQA records → one judge's accuracy, and several judges side by side. Pure:
records in, numbers and `Table`s out.

As NegVQA reports it (the seed's Table 1; VLMEvalKit's `vmcbench.report_vmc_acc`, which its authors
ran): the overall accuracy is the share of questions answered right; a source dataset's accuracy is
the share of its questions; a **domain's accuracy is the mean of its source datasets' accuracies**
(each dataset counts once, however many questions it has). Error rows (no answer) are counted and
left out of every figure.

Intervals: the seeded percentile bootstrap of `negt2ibench.core.bootstrap`, questions resampled
within each source dataset (`resample_indices`, the seed offset by the dataset's place in the sorted
names, so two judges on the same questions get the same draws), every figure recomputed from the same
draws. With the originals (`OUT.original.jsonl`), the drop is original − negated accuracy over the
questions answered in both forms, paired: a resample draws a question with both its answers.

Letter bias: the share of answers that are A, beside the share of A in the answer key (NegVQA
shuffles the two choices, so about half); a judge that answers A whatever is asked shows 100% against
about 50%. With `--generate`, how many written replies name the letter the scores chose, the other
letter, or none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from negt2ibench.core.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES
from negt2ibench.core.errors import UserError
from negt2ibench.core.table import Column, Table

from .accuracy import accuracies, paired_drop, share
from .figures import DomainAccuracy, GeneratedReplies, Interval, JudgeSummary
from .records import LETTERS, NegVQARecord

NAN = math.nan


@dataclass
class JudgeRecords:
    """One judge's records: its negated answers, and its originals when they were asked."""

    judge: str
    params: str
    negated: list[NegVQARecord] = field(default_factory=list)
    original: list[NegVQARecord] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


def group_by_judge(files: Sequence[tuple[str, Sequence[NegVQARecord]]]) -> list[JudgeRecords]:
    """Records of several files, by judge (in first-seen order) and form.

    Args:
        files: (file name, its records) of each file.

    Returns:
        Each judge's negated and original records, and the files they came from.

    Raises:
        UserError: a judge's form given in two files (which answers to count is not knowable), or a
            judge with only original answers.
    """
    judges: dict[str, JudgeRecords] = {}
    seen: dict[tuple[str, str], str] = {}
    for name, records in files:
        for record in records:
            entry = judges.setdefault(record.judge, JudgeRecords(record.judge, record.params))
            where = seen.setdefault((record.judge, record.form), name)
            if where != name:
                raise UserError(f"{record.judge}'s {record.form} answers are in both {where} and {name}: pass one")
            (entry.negated if record.form == "negated" else entry.original).append(record)
            if name not in entry.files:
                entry.files.append(name)
    for entry in judges.values():
        if not entry.negated:
            given = ", ".join(entry.files)
            raise UserError(f"{entry.judge}: only original answers given ({given}); pass its OUT.jsonl too")
    return list(judges.values())


def summarize_judge(
    records: JudgeRecords,
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
) -> JudgeSummary:
    """Every figure of one judge (see the module's docstring for how each is counted).

    Args:
        records: the judge's negated answers and, when they were asked, its originals.
        resamples: bootstrap resamples of the intervals; 0 gives (NaN, NaN) intervals.
        seed: the bootstrap's seed (a source dataset's draws use it offset by the dataset's place).
        confidence: the intervals' confidence level.

    Returns:
        The judge's summary: accuracy overall, by domain and by source dataset, the letter shares,
        the drop from the originals (None without originals), the written replies (None without
        any), as fractions with (low, high) intervals; a plain dict, written to JSON as it is.
    """
    answered = [r for r in records.negated if r.error is None]
    errors = Counter((r.error or "").split(":", 1)[0] for r in records.negated if r.error is not None)
    figures = accuracies(answered, resamples, seed, confidence)
    chosen = Counter(str(r.letter) for r in answered)
    key = Counter(str(r.answer) for r in answered)
    replies = [r for r in answered if r.generated is not None]
    generated: GeneratedReplies | None = None
    if replies:
        disagree = sum(bool(r.disagrees) for r in replies)
        unread = sum(r.generated_letter is None for r in replies)
        generated = {
            "replies": len(replies),
            "disagree": disagree,
            "disagree_share": share(disagree, len(replies)),
            "unread": unread,
        }
    return {  # the order of the JSON's keys
        "judge": records.judge,
        "params": records.params,
        "files": list(records.files),
        "error_rows": sum(errors.values()),
        "error_kinds": dict(sorted(errors.items())),
        "questions": figures["questions"],
        "correct": figures["correct"],
        "accuracy": figures["accuracy"],
        "accuracy_ci": figures["accuracy_ci"],
        "by_domain": figures["by_domain"],
        "by_source": figures["by_source"],
        "letters": {
            "chosen": {letter: share(chosen[letter], len(answered)) for letter in LETTERS},
            "key": {letter: share(key[letter], len(answered)) for letter in LETTERS},
            "bias_A": share(chosen["A"] - key["A"], len(answered)),
        },
        "original": paired_drop(answered, records.original, resamples, seed, confidence) if records.original else None,
        "generated": generated,
        "options": {"bootstrap": resamples, "seed": seed, "confidence": confidence},
    }


# -- tables (percentages, one decimal) ----------------------------------------------------------------


def _pct(value: float | None) -> float:
    return NAN if value is None else 100.0 * value


def _pct_ci(bounds: Interval | None) -> Interval:
    return (NAN, NAN) if bounds is None else (_pct(bounds[0]), _pct(bounds[1]))


def _with_interval(key: str, label: str) -> list[Column]:
    return [
        Column(key, label, higher_is_better=True, interval=f"{key}_ci"),
        Column(f"{key}_ci", f"{label} interval", in_markdown=False, pair=True),
    ]


# Under every table with a Drop: it is over the pairs only, while the NegVQA column is over every question.
PAIRED_NOTE = (
    "Original: the affirmative questions' accuracy over the questions answered in both forms; Drop: original − "
    "negated over those pairs only, so it is not Original − NegVQA when some questions were asked only negated."
)


def _accuracy_of(block: DomainAccuracy | None) -> float | None:
    return block["accuracy"] if block else None


def judges_table(summaries: Sequence[JudgeSummary]) -> Table:
    """One row per judge: the seed's Table 1 and its Figure 3 by size.

    Parameters, questions, accuracy overall and by domain, the original's accuracy and the drop,
    the share of A answers.

    Args:
        summaries: each judge's summary (`summarize_judge`).

    Returns:
        The `negvqa` table (percentages), the best in bold when there are several judges.
    """
    domains = list(dict.fromkeys(d for s in summaries for d in s["by_domain"]))
    columns = [Column("judge", "Judge", str), Column("params", "Params", str), Column("questions", "n", "{}")]
    columns += _with_interval("accuracy", "NegVQA")
    columns += [Column(f"domain:{d}", d, higher_is_better=True) for d in domains]
    columns += [Column("original", "Original", higher_is_better=True), Column("drop", "Drop", interval="drop_ci")]
    columns += [Column("drop_ci", "Drop interval", in_markdown=False, pair=True)]
    columns += [Column("chosen_A", "A chosen"), Column("key_A", "A in key")]
    rows = []
    for s in summaries:
        original = s["original"]
        row = {
            "judge": s["judge"],
            "params": s["params"],
            "questions": s["questions"],
            "accuracy": _pct(s["accuracy"]),
            "accuracy_ci": _pct_ci(s["accuracy_ci"]),
            "original": _pct(original["accuracy_original"] if original else None),
            "drop": _pct(original["drop"] if original else None),
            "drop_ci": _pct_ci(original.get("drop_ci") if original else None),
            "chosen_A": _pct(s["letters"]["chosen"]["A"]),
            "key_A": _pct(s["letters"]["key"]["A"]),
        }
        row |= {f"domain:{d}": _pct(_accuracy_of(s["by_domain"].get(d))) for d in domains}
        rows.append(row)
    notes = (
        "Accuracy on the negated questions (%), 95% bootstrap interval (questions resampled within each source "
        f"dataset). A domain is the mean of its source datasets' accuracies, as NegVQA reports it. {PAIRED_NOTE} "
        "A chosen / A in key: the share of answers that are A, and of A in the answer key.",
    )
    return Table("negvqa", "NegVQA accuracy by judge", columns, rows, notes=notes, bold_best=len(rows) > 1)


def domain_table(summary: JudgeSummary) -> Table:
    """One judge by domain: questions, accuracy [interval], the original's accuracy and the drop.

    Args:
        summary: the judge's summary.

    Returns:
        The `negvqa_domains` table (percentages).
    """
    columns = [Column("domain", "Domain", str), Column("sources", "Source datasets", str), Column("n", "n", "{}")]
    columns += _with_interval("accuracy", "NegVQA")
    columns += [Column("original", "Original"), Column("drop", "Drop", interval="drop_ci")]
    columns += [Column("drop_ci", "Drop interval", in_markdown=False, pair=True)]
    drops = summary["original"]["by_domain"] if summary["original"] else {}
    rows = []
    for domain, block in summary["by_domain"].items():
        drop = drops.get(domain)
        rows.append(
            {
                "domain": domain,
                "sources": str(len(block["sources"])),
                "n": block["questions"],
                "accuracy": _pct(block["accuracy"]),
                "accuracy_ci": _pct_ci(block["accuracy_ci"]),
                "original": _pct(drop["accuracy_original"] if drop else None),
                "drop": _pct(drop["drop"] if drop else None),
                "drop_ci": _pct_ci(drop["drop_ci"] if drop else None),
            }
        )
    title = f"NegVQA by domain: {summary['judge']}"
    notes = ["A domain: the mean of its source datasets' accuracies, as NegVQA reports it."]
    if summary["original"]:
        notes.append(PAIRED_NOTE)
    return Table("negvqa_domains", title, columns, rows, notes=notes)


def source_table(summary: JudgeSummary) -> Table:
    """One judge by source dataset: its domain, questions, correct answers and accuracy [interval].

    Args:
        summary: the judge's summary.

    Returns:
        The `negvqa_sources` table (percentages).
    """
    columns = [Column("source", "Source dataset", str), Column("domain", "Domain", str), Column("n", "n", "{}")]
    columns += [Column("correct", "Correct", "{}"), *_with_interval("accuracy", "NegVQA")]
    rows = [
        {
            "source": source,
            "domain": block["domain"],
            "n": block["questions"],
            "correct": block["correct"],
            "accuracy": _pct(block["accuracy"]),
            "accuracy_ci": _pct_ci(block["accuracy_ci"]),
        }
        for source, block in summary["by_source"].items()
    ]
    return Table("negvqa_sources", f"NegVQA by source dataset: {summary['judge']}", columns, rows)


def _number(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}"


def _percent(value: float | None) -> str:
    text = _number(value)
    return text if text == "–" else f"{text}%"


def _bounds(bounds: Interval | None) -> str:
    if bounds is None or any(math.isnan(b) for b in bounds):
        return ""
    return f" [{100 * bounds[0]:.1f}, {100 * bounds[1]:.1f}]"


def headline(summary: JudgeSummary) -> list[str]:
    """One judge's figures in a few lines (what the tables do not say at a glance).

    Args:
        summary: the judge's summary.

    Returns:
        The lines: accuracy, the originals' drop (when asked), the letters, the replies (when
        written).
    """
    errors = f", {summary['error_rows']} error rows not scored" if summary["error_rows"] else ""
    lines = [
        f"{summary['judge']} ({summary['params']}): {summary['questions']} negated questions{errors}; "
        f"accuracy {_percent(summary['accuracy'])}{_bounds(summary['accuracy_ci'])} (chance: 50%)"
    ]
    original = summary["original"]
    if original and original["pairs"]:
        lines.append(
            f"  originals: {original['pairs']} questions answered in both forms; original "
            f"{_percent(original['accuracy_original'])}, negated {_percent(original['accuracy_negated'])}, "
            f"drop {_number(original['drop'])} points{_bounds(original.get('drop_ci'))}"
        )
    letters = summary["letters"]
    lines.append(
        f"  letters: A chosen in {_percent(letters['chosen']['A'])} of answers, A is right in "
        f"{_percent(letters['key']['A'])} (bias toward A: {_number(letters['bias_A'])} points)"
    )
    generated = summary["generated"]
    if generated:
        lines.append("  " + replies_line(generated))
    return lines


def replies_line(generated: GeneratedReplies) -> str:
    """What the written replies name: the scores' letter, the other letter, or no letter.

    A reply that names none counts as disagreeing in `disagree` (`NegVQARecord.disagrees`).

    Args:
        generated: the summary's `generated` block.

    Returns:
        One line.
    """
    replies, unread, disagree = generated["replies"], generated["unread"], generated["disagree"]
    same, other = replies - disagree, disagree - unread
    return (
        f"written replies: {replies}; {same} name the letter the scores chose, {other} the other letter, "
        f"{unread} no letter"
    )
