"""NegVQA beside the paper's Tables 2 and 10, as a section of `agree`'s report (`agree --negvqa FILE...`).

For each judge of the NegVQA files (records of `negt2ibench negvqa`, its originals read beside them),
one row: its NegVQA accuracy with the interval, the originals' accuracy and the drop when they were
asked, the share of A answers; then, when `agree` was given that judge's runs (evaluators
``KEY/whole``, ``KEY/pos``, ``KEY/neg``), each mode's accuracy and κ against the majority label
(Table 2), and the flip rate and complement error of its pos/neg pair (Table 10, the `negation`
probe's figures). ``agreement.json`` gains ``"probes": {"negvqa": {KEY: {...}}}`` (fractions),
``agreement.md`` a section; `agree` prints it. docs/judges.md says how to read the two together.

Registered lazily by `validation.probes`; the records come in `ProbeInput.extra["negvqa"]` (a list of
`judges.negvqa.summary.JudgeRecords`), so the probe reads no file.
"""

from __future__ import annotations

from negt2ibench.core.table import Table

from .negation_probe import MODES, negation
from .probes import Probe, ProbeInput
from .report import section_markdown, study_table


def negvqa(data: ProbeInput) -> dict | None:
    """{judge key: figures} for every judge of the NegVQA records given; None when none was."""
    from judges.negvqa.summary import summarize_judge

    judges = data.extra.get("negvqa") or []
    if not judges:
        return None
    flips = negation(data) or {}
    results: dict[str, dict] = {}
    for records in judges:
        summary = summarize_judge(records, resamples=data.resamples, seed=data.seed)
        original = summary["original"]
        entry = {
            "params": summary["params"],
            "n": summary["questions"],
            "negvqa": summary["accuracy"],
            "negvqa_ci": summary["accuracy_ci"],
            "negvqa_original": original["accuracy_original"] if original else None,
            "negvqa_drop": original["drop"] if original else None,
            "chosen_A": summary["letters"]["chosen"]["A"],
            "files": summary["files"],
        }
        for mode in MODES:
            runs = [run for run in data.runs if run.evaluator == f"{records.judge}/{mode}"]
            if len(runs) == 1:
                block = data.evaluators[runs[0].name]
                entry[f"accuracy_{mode}"] = block["accuracy"]
                entry[f"kappa_{mode}"] = block["kappa"]
        probe = flips.get(records.judge, {})
        if "flip_rate" in probe:
            entry["flip_rate"] = probe["flip_rate"]
            entry["complement_error"] = probe["complement_error"]
        results[records.judge] = entry
    return results


def negvqa_table(result: dict) -> Table:
    columns = {"judge": "Judge", "params": "Params", "n": "NegVQA n", "negvqa": "NegVQA"}
    columns |= {"negvqa_original": "NegVQA orig.", "negvqa_drop": "Drop", "chosen_A": "A chosen"}
    for mode in MODES:
        columns |= {f"accuracy_{mode}": f"Acc. {mode}", f"kappa_{mode}": f"κ {mode}"}
    columns |= {"flip_rate": "Flip", "complement_error": "Compl. err."}
    rows = []
    for judge, entry in result.items():
        row = {"judge": judge} | {key: value for key, value in entry.items() if key != "files"}
        error = entry.get("complement_error")
        if error is not None:
            row["complement_error"] = "–" if error != error else f"{error:.3f}"  # a mean, not a %
        rows.append(row)
    notes = (
        "NegVQA: accuracy (%) on its negated two-choice questions (chance 50%), 95% bootstrap interval; orig. and "
        "Drop: the affirmative originals' accuracy and original − negated, when they were asked; A chosen: the "
        "share of answers that are A (about half the key is A). Acc. and κ: the judge's agreement with the majority "
        "human label in each mode (Table 2); Flip and Compl. err.: its pos/neg negation probe (Table 10). Low NegVQA "
        "with a high neg-mode κ, or the reverse, means the two measure different things for this judge: see "
        "docs/judges.md."
    )
    return study_table("negvqa_probe", "NegVQA beside Tables 2 and 10", columns, rows, notes)


def negvqa_markdown(result: dict) -> str:
    return section_markdown(negvqa_table(result))


NEGVQA_PROBE = Probe("negvqa", negvqa, negvqa_markdown)
