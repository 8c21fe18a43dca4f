"""The paper's validation tables (2, 5, 6, 7, 9, 10, 11, 12, 13) built from a hand-made report.

The input is the report `agree` computes (fractions), written here by hand with round numbers,
so every expected cell below (percentages, Δ = neg − pos, blanks, order, bold) is worked out in
the comments, never by calling the code under test. The statistics themselves are tested in
test_validation_stats.py and end to end in test_agree*.py.

Evaluators (in file order) and their image-level figures:

    run                   κ     τ     ρ     pair  prec  rec   called  TP TN FP FN
    negt2ibench/current   0.50  0.25  0.30  0.70  0.75  0.50  0.25    3  4  1  2
    qwen3_vl_8b/whole     0.12  0.10  0.20  0.60  0.40  0.40  0.30    2  3  3  3
    qwen3_vl_8b/pos       0.62  0.48  0.56  0.80  0.80  0.60  0.40    4  4  1  1
    qwen3_vl_8b/neg       0.48  0.40  0.50  0.78  0.70  0.70  0.45    4  3  2  1
    internvl3_8b/pos      0.75  0.35  0.70  0.85  0.90  0.45  0.35    5  4  0  1
"""

from __future__ import annotations

import math

from negt2ibench.core.table import to_csv, to_markdown
from validation.costs import Cost
from validation.paper_breakdowns import table11, table12, table13
from validation.paper_tables import table2, table5, table6, table7, table9, table10

SETTINGS = ("1:0", "0:1", "2:0", "1:1", "0:2", "2:1", "1:2", "2:2")
CATEGORIES = ("color", "material", "directional", "proximity", "comparative", "depth")  # the corpus's order
FIGURES = {
    "negt2ibench/current": (0.50, 0.25, 0.30, 0.70, 0.75, 0.50, 0.25, 3, 4, 1, 2),
    "qwen3_vl_8b/whole": (0.12, 0.10, 0.20, 0.60, 0.40, 0.40, 0.30, 2, 3, 3, 3),
    "qwen3_vl_8b/pos": (0.62, 0.48, 0.56, 0.80, 0.80, 0.60, 0.40, 4, 4, 1, 1),
    "qwen3_vl_8b/neg": (0.48, 0.40, 0.50, 0.78, 0.70, 0.70, 0.45, 4, 3, 2, 1),
    "internvl3_8b/pos": (0.75, 0.35, 0.70, 0.85, 0.90, 0.45, 0.35, 5, 4, 0, 1),
}
KEYS = ("kappa", "kendall_tau", "spearman_rho", "pair_accuracy", "precision", "recall", "called_correct")


def _cells(tau: float, buckets) -> dict:
    # By setting / category: τ is the overall τ plus 0.01 per position (1:0 → +0.00, 0:1 → +0.01, …).
    return {
        b: {"n": 10, "kendall_tau": round(tau + i / 100, 2), "kendall_tau_ci": [0.0, 0.5]}
        for i, b in enumerate(buckets)
    }


def _elements(name: str) -> dict:
    if name.endswith("/whole"):
        return {}  # a whole-prompt run decides no element
    kappa = FIGURES[name][0]
    return {
        block: {"n": n, "accuracy": 0.9 - shift, "kappa": kappa - shift, "kappa_ci": [0.1, 0.9]}
        | {"satisfied": 0.8 - shift, "unsatisfied": 0.6 - shift, "balanced": 0.7 - shift}
        for block, n, shift in (("all", 30, 0.0), ("positive", 24, 0.0), ("negated", 6, 0.2))
    }


def hand_report(probes: dict | None = None) -> dict:
    evaluators = {}
    for name, figures in FIGURES.items():
        block = dict(zip(KEYS, figures[:7], strict=True)) | dict(
            zip(("tp", "tn", "fp", "fn"), figures[7:], strict=True)
        )
        block |= {"evaluator": name, "n": 10, "accuracy": 0.8, "spearman_rho_ci": [0.1, 0.9]}
        block |= {
            "by_setting": _cells(block["kendall_tau"], SETTINGS),
            "by_category": _cells(block["kendall_tau"], CATEGORIES),
        }
        block["elements"] = _elements(name)
        evaluators[name] = block
    human = {
        "n": 10,
        "majority_pass": 0.4,
        "loo_kappa": 0.9,  # better than every evaluator: shown, never bold
        "loo_tau": 0.95,
        "elements": {
            "all": {"n": 30, "fleiss_kappa": 0.72, "unanimous": 0.85, "loo_kappa": 0.71, "pairwise_kappa": 0.73},
            "positive": {"n": 24, "fleiss_kappa": 0.73, "unanimous": 0.88, "loo_kappa": 0.74, "pairwise_kappa": 0.75},
            "negated": {"n": 6, "fleiss_kappa": 0.6, "unanimous": 0.7, "loo_kappa": 0.59, "pairwise_kappa": 0.61},
        },
        "by_setting": {s: {"n": 10, "loo_tau": 0.9} for s in SETTINGS},
        "by_category": {c: {"n": 10, "loo_tau": 0.8} for c in CATEGORIES},
    }
    report = {"n_images": 10, "options": {"resamples": 100, "seed": 0, "confidence": 0.95}, "human": human}
    report["evaluators"] = evaluators
    if probes:
        report["probes"] = probes
    return report


def grid(table) -> list[list[str]]:
    """The Markdown grid's rows as cells (header and alignment lines included)."""
    lines = [line for line in to_markdown(table, caption=False, notes=False).splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def row(table, first: str) -> list[str]:
    return next(cells for cells in grid(table) if cells[0] == first)


def test_table2_one_row_per_evaluator_with_costs_modes_deltas_and_bold_best():
    costs = {
        "negt2ibench/current": Cost("negt2ibench/current", 1.2, 3.0, 0.4, "cuda", "scorer.run.json"),
        "qwen3_vl_8b": Cost("qwen3_vl_8b", 8.0, 16.5, 0.45, "cuda", "q8.run.json"),
    }  # InternVL3-8B has no record: its cost cells are blank
    table = table2(hand_report(), costs)
    cells = grid(table)
    assert cells[0] == ["", "Cost", "", "", "Cohen's κ", "", "", "", "Per element", "", "Kendall τ", "", "", ""]
    assert cells[2][4:8] == ["**whole ↑**", "**pos ↑**", "**neg ↑**", "**Δ**"]
    assert [c[0] for c in cells[3:]] == ["NegT2IBench (ours)", "Qwen3-VL-8B", "InternVL3-8B", "H. inter-annotator"]
    # Scorer: one mode, under pos and neg, no whole, no Δ. Fewest Params (1.2 < 8), lowest GiB (3.0 < 16.5) and
    # s/img (0.40 < 0.45): bold; its neg κ 50.0 beats Qwen3-VL-8B's 48.0 (InternVL3-8B has no neg run): bold.
    assert row(table, "NegT2IBench (ours)") == [
        "NegT2IBench (ours)",
        "**1.2B**",
        "**3.0**",
        "**0.40**",
        "–",
        "50.0",
        "**50.0**",
        "–",
        "75.0",
        "50.0",
        "–",
        "25.0",
        "25.0",
        "–",
    ]
    # Qwen3-VL-8B: κ 12.0 / 62.0 / 48.0, Δ = 0.48 − 0.62 = −14.0; τ 10.0 / 48.0 / 40.0, Δ = −8.0; prec/rec of pos.
    # Whole is its alone (nothing to beat): not bold; best recall 60.0 (> 50.0 > 45.0), best τ pos 48.0 and neg
    # 40.0 (> 35.0, 25.0); Δ has no direction: never bold.
    assert row(table, "Qwen3-VL-8B") == [
        "Qwen3-VL-8B",
        "8B",
        "16.5",
        "0.45",
        "12.0",
        "62.0",
        "48.0",
        "-14.0",
        "80.0",
        "**60.0**",
        "10.0",
        "**48.0**",
        "**40.0**",
        "-8.0",
    ]
    # InternVL3-8B: pos only; κ pos 75.0 is the best (> 62.0 > 50.0), precision 90.0 the best.
    assert row(table, "InternVL3-8B") == [
        "InternVL3-8B",
        "–",
        "–",
        "–",
        "–",
        "**75.0**",
        "–",
        "–",
        "**90.0**",
        "45.0",
        "–",
        "35.0",
        "–",
        "–",
    ]
    # The annotators: leave-one-out κ 90.0 and τ 95.0 under pos, higher than anyone's, yet not bold.
    assert row(table, "H. inter-annotator")[5] == "90.0" and row(table, "H. inter-annotator")[11] == "95.0"
    header = to_csv(table).splitlines()[0]
    assert header == (
        "key,evaluator,params,gib,s_per_image,kappa_whole,kappa_pos,kappa_neg,kappa_delta,precision,recall,"
        "tau_whole,tau_pos,tau_neg,tau_delta,cost_source"
    )
    assert math.isclose(next(r for r in table.rows if r["key"] == "qwen3_vl_8b")["kappa_delta"], -0.14)


def test_table5_all_affirmative_negated_with_leave_one_out_kappa():
    table = table5(hand_report())
    assert grid(table)[0] == ["Statements", "n", "Fleiss' κ", "Unanimous", "Leave-one-out κ"]
    assert grid(table)[2:] == [
        ["All statements", "30", "72.0", "85.0", "71.0"],
        ["Affirmative", "24", "73.0", "88.0", "74.0"],
        ["Negated", "6", "60.0", "70.0", "59.0"],
    ]
    assert "pairwise_kappa" in to_csv(table).splitlines()[0]  # kept in the files


def test_table6_kappa_in_every_mode_scorer_apart_from_judges():
    table = table6(hand_report())
    assert grid(table)[0] == ["Evaluator", "Whole prompt", "Per element", "Negated per element"]
    # Best per element: InternVL3-8B 75.0; best negated: the scorer's 50.0 (> 48.0); best whole: 12.0 alone: no bold.
    assert grid(table)[2:] == [
        ["*Detector-based*", "", "", ""],
        ["NegT2IBench (ours)", "–", "50.0", "**50.0**"],
        ["*VQA judges*", "", "", ""],
        ["Qwen3-VL-8B", "12.0", "62.0", "48.0"],
        ["InternVL3-8B", "–", "**75.0**", "–"],
    ]


def test_table7_groups_ordered_by_best_rho_with_intervals():
    table = table7(hand_report())
    # Best ρ: InternVL3-8B 0.70 > Qwen3-VL-8B max(0.20, 0.56, 0.50) = 0.56 > the scorer 0.30.
    assert [cells[0] for cells in grid(table)[2:]] == [
        "*InternVL3-8B*",
        "pos. per element",
        "*Qwen3-VL-8B*",
        "whole prompt",
        "pos. per element",
        "neg. per element",
        "*NegT2IBench (ours)*",
        "per element",
    ]
    assert grid(table)[3] == ["pos. per element", "**70.0** [10.0, 90.0]", "35.0", "**85.0**"]
    assert grid(table)[5] == ["whole prompt", "20.0 [10.0, 90.0]", "10.0", "60.0"]
    assert grid(table)[6][2] == "**48.0**"  # Qwen3-VL-8B pos has the best τ


def test_table9_per_element_mode_judges_by_kappa_scorer_apart():
    table = table9(hand_report())
    assert grid(table)[0] == ["Evaluator", "TP", "TN", "FP", "FN", "Prec.", "Rec.", "Called correct (%)"]
    # Judges' pos runs by κ: InternVL3-8B 0.75 > Qwen3-VL-8B 0.62; whole and neg runs are not in Table 9.
    # Bold: TP 5 (most), FP 0 (fewest), FN 1 (a tie: both), Prec. 90.0, Rec. 60.0; TN is 4 for all: nothing to bold.
    assert grid(table)[2:] == [
        ["*VQA judges, per element (pos.)*", "", "", "", "", "", "", ""],
        ["InternVL3-8B, pos.", "**5**", "4", "**0**", "**1**", "**90.0**", "45.0", "35.0"],
        ["Qwen3-VL-8B, pos.", "4", "4", "1", "**1**", "80.0", "**60.0**", "40.0"],
        ["*Detector-based*", "", "", "", "", "", "", ""],
        ["NegT2IBench (ours)", "3", "4", "1", "2", "75.0", "50.0", "25.0"],
    ]
    assert "passes 40.0% of the images" in table.notes[0]


def test_table10_judges_by_flip_rate_with_the_annotators_share():
    entry = {"n": 10, "n_statements": 12, "accuracy_whole": 0.7, "accuracy_pos": 0.85, "accuracy_neg": 0.75}
    probes = {
        "negation": {
            "qwen3_vl_8b": entry
            | {"flip_rate": 0.4, "complement_error": 0.25}
            | {"called_correct_pos": 0.3, "called_correct_neg": 0.5},
            "internvl3_8b": entry
            | {"flip_rate": 0.8, "complement_error": 0.125, "accuracy_whole": None}
            | {"called_correct_pos": 0.35, "called_correct_neg": 0.45},
            "other": {"skipped": "several pos or neg runs of other given (a, b): pass one of each"},
        }
    }
    table = table10(hand_report(probes))
    assert grid(table)[0][1:] == ["Acc. whole", "Acc. pos.", "Acc. neg.", "Flip (%)", "Compl. err."] + [
        "Called corr. pos. (%)",
        "Called corr. neg. (%)",
    ]
    # Flip 0.8 before 0.4, bold; compl. err. 0.125 < 0.25, bold; accuracies read alike (85.0, 75.0) and whole is
    # one judge's alone: nothing to bold there; called correct has no better side.
    assert grid(table)[2:] == [
        ["InternVL3-8B", "–", "85.0", "75.0", "**80.0**", "**0.125**", "35.0", "45.0"],
        ["Qwen3-VL-8B", "70.0", "85.0", "75.0", "40.0", "0.250", "30.0", "50.0"],
    ]
    assert "the annotators pass 40.0%" in table.caption
    assert any("Not paired: other" in note for note in table.notes)
    assert table10(hand_report()).rows == () and "nothing to probe" in table10(hand_report()).notes[0]


def test_table11_loads_header_negated_row_blank_without_negation():
    table = table11(hand_report())
    cells = grid(table)
    assert cells[0] == ["", "Load 1", "", "Load 2", "", "", "Load 3", "", "Load 4", ""]
    assert cells[2][1:] == ["**" + s + "**" for s in SETTINGS] + ["**All**"]  # cells[1]: the alignment line
    # Qwen3-VL-8B neg: τ 0.40 + 0.01 per setting, blank at 1:0 and 2:0 (no negated statement to rephrase).
    neg = [c for c in cells if c[0] == "neg. per element"][0]
    assert neg == ["neg. per element", "–", "41.0", "–", "43.0", "44.0", "45.0", "46.0", "47.0", "40.0"]
    # pos rows: Qwen3-VL-8B 48.0 + i is the best in every setting (> InternVL 35.0 + i > scorer 25.0 + i).
    pos = [c for c in cells if c[0] == "pos. per element"]
    assert pos[1] == ["pos. per element", *(f"**{48 + i}.0**" for i in range(8)), "**48.0**"]
    assert cells[-2:] == [["*Annotators*"] + [""] * 9, ["H. inter-annotator"] + ["90.0"] * 8 + ["95.0"]]
    assert "median width of 50 points" in table.notes[0]  # every interval is [0.0, 0.5]


def test_table12_categories_in_the_papers_order_under_attributes_and_relations():
    table = table12(hand_report())
    cells = grid(table)
    assert cells[0] == ["", "Attributes", "", "Relations", "", "", "", ""]
    assert cells[2] == ["**Evaluator**"] + [f"**{c}**" for c in ("Color", "Material", "Comparative", "Depth")] + [
        "**Directional**",
        "**Proximity**",
        "**All**",
    ]
    # The scorer's τ by category, 0.25 + 0.01 × the category's position in the corpus's order
    # (color 0, material 1, directional 2, proximity 3, comparative 4, depth 5), in the paper's order:
    scorer = [c for c in cells if c[0] == "per element"][0]
    assert scorer == ["per element", "25.0", "26.0", "29.0", "30.0", "27.0", "28.0", "25.0"]


def test_table13_blocks_each_with_its_annotators_row_bold_within_a_block():
    table = table13(hand_report())
    cells = grid(table)
    assert cells[0] == ["Evaluator", "n", "Acc.", "κ", "Satisfied", "Unsatisfied", "Balanced"]
    blocks = [c[0] for c in cells if c[0].startswith("*")]
    assert blocks == ["*Affirmative statements*", "*Negated statements*", "*All elements*"]
    affirmative = cells[cells.index(["*Affirmative statements*"] + [""] * 6) + 1 :][:5]
    # No whole-prompt row. κ: InternVL3-8B 0.75 is the best of the block; the other columns read alike: no bold.
    assert [c[0] for c in affirmative] == [
        "NegT2IBench (ours)",
        "Qwen3-VL-8B, pos.",
        "Qwen3-VL-8B, neg.",
        "InternVL3-8B, pos.",
        "H. inter-annotator",
    ]
    assert affirmative[3] == ["InternVL3-8B, pos.", "24", "90.0", "**75.0** [10.0, 90.0]", "80.0", "60.0", "70.0"]
    assert affirmative[1][3] == "62.0 [10.0, 90.0]"
    assert affirmative[4] == ["H. inter-annotator", "24", "–", "74.0", "–", "–", "–"]
    # Negated block: every figure 0.2 lower (κ 0.55 for InternVL3-8B), bold again within the block.
    negated = cells[cells.index(["*Negated statements*"] + [""] * 6) + 1 :][:5]
    assert negated[3][3] == "**55.0** [10.0, 90.0]" and negated[4][3] == "59.0"
