"""Figures 5 and 6 and the element count (`dataset_builder.balance`, `figures`, `validate --out`).

Worked by hand for the corpus (docs/corpus.md): per category, 100 draws per load; an attribute draw
of load L names L objects, a relation draw L + 1. A setting P:N renders its load's draw once, and
loads 1-4 have 2, 3, 2 and 1 settings. So object uses per category are:

    per draw     attributes 100·(1+2+3+4) = 1,000 = 79·12 + 52 → most even: 52 × 13, 27 × 12
                 relations  100·(2+3+4+5) = 1,400 = 79·17 + 57 → 57 × 18, 22 × 17
    per prompt   attributes 100·(2·1 + 3·2 + 2·3 + 1·4) = 1,800 = 79·22 + 62 → 62 × 23, 17 × 22
                 relations  100·(2·2 + 3·3 + 2·4 + 1·5) = 2,600 = 79·32 + 72 → 72 × 33, 7 × 32

The draws balance uses within one (per draw: most even); rendering load-2 draws three times and
load-4 draws once cannot keep that per prompt. Statements per category: 100·(1+1+2+2+2+3+3+4) =
1,800, half positive; elements per prompt 2(P+N) for attributes, 2(P+N) + 1 for relations:
means 4.5 and 5.5, corpus (2·4.5 + 4·5.5) / 6 = 31/6 ≈ 5.17.
"""

from __future__ import annotations

import csv
import functools

import pytest

from dataset_builder.balance import allocation, element_counts, mean_elements, most_even, value_counts
from dataset_builder.corpus import build_corpus
from dataset_builder.figures import FILES, figure5_summary, figure6_table
from negt2ibench.cli import main

TOTALS = {("attribute", "draw"): 1000, ("attribute", "prompt"): 1800, ("relation", "draw"): 1400}
TOTALS[("relation", "prompt")] = 2600


@functools.lru_cache(maxsize=1)
def corpus():
    return build_corpus()


def test_most_even_allocation():
    assert most_even(1800, 79) == [23] * 62 + [22] * 17
    assert most_even(1400, 79) == [18] * 57 + [17] * 22
    assert most_even(0, 3) == [0, 0, 0] and most_even(5, 0) == []


@pytest.mark.parametrize("category, kind", [("color", "attribute"), ("depth", "relation")])
def test_object_uses_per_draw_are_most_even_and_per_prompt_are_not(category, kind):
    per_draw = allocation(corpus(), category, "draw")
    per_prompt = allocation(corpus(), category, "prompt")
    assert (per_draw.total, per_prompt.total) == (TOTALS[(kind, "draw")], TOTALS[(kind, "prompt")])
    assert per_draw.holds and per_draw.used == 79 and list(per_draw.even) == most_even(per_draw.total, 79)
    assert not per_prompt.holds and per_prompt.used == 79
    assert list(per_prompt.counts) == sorted(per_prompt.counts, reverse=True)  # sorted, most used first


def test_counting_a_small_set_by_hand():
    records = {r.prompt_id: r for r in corpus()}
    # One load-1 draw rendered as 1:0 and 0:1, and one load-2 draw as 2:0: per draw each object once,
    # per prompt the load-1 object twice.
    chosen = [records["color_pos1_neg0_000"], records["color_pos0_neg1_000"], records["color_pos2_neg0_000"]]
    single = chosen[0].objects[0]
    pair = chosen[2].objects
    counted = allocation(chosen, "color", "prompt")
    per_prompt = dict(zip(counted.objects, counted.counts, strict=True))
    assert per_prompt[single] == 2 and all(per_prompt[name] == 1 for name in pair)
    per_draw = allocation(chosen, "color", "draw")
    assert (
        per_draw.total == 3 and per_draw.counts[:3] == (1, 1, 1) and per_draw.holds
    )  # 3 uses over 79 classes: 1, 1, 1, 0, …
    # Values: one value per prompt; the three prompts hold 1 positive, 1 negated, 2 positive statements.
    values = value_counts(chosen, "color")
    assert sum(v["positive"] for v in values.values()) == 3 and sum(v["negated"] for v in values.values()) == 1


def test_values_and_predicates_are_even_within_each_category():
    table = figure6_table(corpus())
    color = [row for row in table.rows if row["category"] == "color"]
    assert len(color) == 10 and {(row["positive"], row["negated"]) for row in color} == {(90, 90)}  # 900 / 10
    depth = [row for row in table.rows if row["category"] == "depth"]
    assert {(row["positive"], row["negated"], row["share"], row["even_share"]) for row in depth} == {
        (450, 450, 0.5, 0.5)
    }


def test_elements_per_setting_and_the_corpus_average():
    rows = {(row["kind"], row["setting"]): row for row in element_counts(corpus())}
    assert rows[("attribute", "2:1")]["elements"] == 6 and rows[("relation", "2:1")]["elements"] == 7
    assert rows[("relation", "1:0")]["objects"] == 2 and rows[("relation", "1:0")]["statements"] == 1
    assert mean_elements(corpus()) == pytest.approx(31 / 6)


@pytest.mark.slow
def test_validate_out_writes_the_figures_and_says_whether_the_allocation_holds(tmp_path, capsys):
    folder = tmp_path / "negt2ibench"
    assert main(["build", "--out", str(folder)]) == 0
    capsys.readouterr()
    figures = tmp_path / "figures"
    assert main(["validate", str(folder), "--out", str(figures)]) == 0
    printed = capsys.readouterr().out
    assert "most even object allocation per draw: holds in every category (color 12-13;" in printed
    assert "most even object allocation per prompt: holds in 0 of 6 (color 21-24 (most even 22-23);" in printed
    assert "objects + statements per prompt: 5.17 over the corpus (attributes 4.50, relations 5.50;" in printed
    assert sorted(p.name for p in figures.iterdir()) == sorted(FILES)
    for png in ("figure5.png", "figure6.png"):
        assert (figures / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (figures / png).stat().st_size > 20_000
    summary = list(csv.DictReader((figures / "figure5_summary.csv").open(encoding="utf-8")))
    assert [(r["category"], r["counting"], r["total"], r["holds"]) for r in summary[:2]] == [
        ("color", "draw", "1000", "yes"),
        ("color", "prompt", "1800", "no"),
    ]
    assert len(list(csv.DictReader((figures / "figure5.csv").open(encoding="utf-8")))) == 6 * 2 * 79
    assert summary == [{k: str(v) for k, v in row.items()} for row in figure5_summary_rows()]
    (tmp_path / "file").write_text("x")
    assert main(["validate", str(folder), "--out", str(tmp_path / "file")]) == 1
    assert "exists and is not a folder" in capsys.readouterr().err


def figure5_summary_rows():
    from dataset_builder.balance import allocations

    return figure5_summary(allocations(corpus())).rows
