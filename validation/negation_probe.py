"""The negation probe (paper Table 10) as a section of `agree`'s report.

When the results given to `agree` include one judge's ``pos`` and ``neg`` runs (evaluators
``"KEY/pos"`` and ``"KEY/neg"``), `judges.probe.negation_probe` compares them on the labelled
images both scored: ``agreement.json`` gains ``"probes": {"negation": {KEY: {...}}}`` with
``n`` (paired images), ``n_statements`` (paired negated statements), ``flips``, ``flip_rate``,
``complement_error``, ``called_correct_pos``, ``called_correct_neg``, the two runs' names, and
each mode's accuracy against the majority label when that run was given (``accuracy_whole``,
``accuracy_pos``, ``accuracy_neg``); ``agreement.md`` gains a Table 10 section.

Registered lazily by `validation.probes` (``"validation.negation_probe:NEGATION_PROBE"``); the
judges package is imported only when `agree` runs. A judge given with several ``pos`` (or
``neg``) runs is not paired (which two belong together is not knowable): its entry says so
(``{"skipped": reason}``).
"""

from __future__ import annotations

from collections import defaultdict

from negt2ibench.core.table import Table

from .probes import Probe, ProbeInput
from .report import section_markdown, study_table
from .runs import EvaluatorRun

MODES = ("whole", "pos", "neg")


def _by_judge(runs: tuple[EvaluatorRun, ...]) -> dict[str, dict[str, list[EvaluatorRun]]]:
    """{judge key: {mode: runs}} for runs whose evaluator is ``KEY/whole|pos|neg``."""
    grouped: dict[str, dict[str, list[EvaluatorRun]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        judge, _, mode = run.evaluator.rpartition("/")
        if judge and mode in MODES:
            grouped[judge][mode].append(run)
    return grouped


def negation(data: ProbeInput) -> dict | None:
    """{judge key: probe figures} for every judge with a pos and a neg run; None when there is none."""
    from judges.probe import negation_probe

    labelled = set(data.labels.labels)
    results: dict[str, dict] = {}
    for judge, modes in sorted(_by_judge(data.runs).items()):
        if not modes.get("pos") or not modes.get("neg"):
            continue
        if len(modes["pos"]) > 1 or len(modes["neg"]) > 1:
            given = ", ".join(run.source for mode in ("pos", "neg") for run in modes[mode])
            results[judge] = {"skipped": f"several pos or neg runs of {judge} given ({given}): pass one of each"}
            continue
        pos, neg = modes["pos"][0], modes["neg"][0]
        figures = negation_probe(
            [record for key, record in pos.records.items() if key in labelled],
            [record for key, record in neg.records.items() if key in labelled],
        )
        entry = {"pos": pos.name, "neg": neg.name, "n": figures["n_images"]}
        entry |= {k: figures[k] for k in ("n_statements", "flips", "flip_rate", "complement_error")}
        entry |= {k: figures[k] for k in ("called_correct_pos", "called_correct_neg")}
        for mode in MODES:
            if len(modes.get(mode, ())) == 1:
                entry[f"accuracy_{mode}"] = data.evaluators[modes[mode][0].name]["accuracy"]
        results[judge] = entry
    return results or None


def negation_table(result: dict) -> Table:
    columns = {"judge": "Judge", "n": "n", "n_statements": "Negated statements"}
    columns |= {f"accuracy_{m}": f"Acc. {m}" for m in MODES}
    columns |= {"flip_rate": "Flip", "complement_error": "Compl. err."}
    columns |= {"called_correct_pos": "Called corr. pos.", "called_correct_neg": "Called corr. neg."}
    rows = []
    for judge, entry in result.items():
        if "skipped" in entry:
            continue
        error = entry["complement_error"]
        row = {"judge": judge} | entry
        row["complement_error"] = "–" if error is None or error != error else f"{error:.3f}"  # a mean, not a %
        rows.append(row)
    skipped = [f"{judge}: {entry['skipped']}" for judge, entry in result.items() if "skipped" in entry]
    notes = (
        "Each negated statement asked affirmatively (pos) and in negated form (neg). Flip: the share whose "
        "yes/no answer changes between the two wordings (higher is better: one is the negation of the other). "
        "Compl. err.: mean |p_pos + p_neg − 1|, 0 when the two probabilities are complements. Called corr.: the "
        "share of the paired images each mode passes. Acc.: each mode's agreement with the majority label."
    )
    if skipped:
        notes += " Not paired: " + "; ".join(skipped) + "."
    return study_table("negation_probe", "Negation probe (paper Table 10)", columns, rows, notes)


def negation_markdown(result: dict) -> str:
    return section_markdown(negation_table(result))


NEGATION_PROBE = Probe("negation", negation, negation_markdown)
