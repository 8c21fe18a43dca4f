"""Table objects and their renderers; the report's tables built once from a hand-made report."""

from __future__ import annotations

import json
import math

import pytest

from evaluator.report import (
    LEADERBOARD_COLUMNS,
    TABLE3_COLUMNS,
    build_report,
    leaderboard_row,
    report_markdown,
    report_tables,
    table3_markdown,
)
from evaluator.report.plots import plot_accuracy_by_setting, plot_failure_causes, plot_statement_accuracy
from negt2ibench.core.table import Column, Table, to_csv, to_frame, to_json, to_markdown
from tests.helpers.report_helpers import hand_results

NAN = math.nan
COLUMNS = (
    Column("model", "Model", fmt=str),
    Column("kind", "Kind", fmt=str.upper),
    Column("score", "Score %", higher_is_better=True),
    Column("n", "N", in_markdown=False),
    Column("note", "Note", fmt=str, in_files=False),
)
ROWS = (
    {"model": "a", "kind": "x", "score": 12.345, "n": 3, "note": "ok"},
    {"model": "a", "kind": "y", "score": NAN, "n": 0, "note": "empty"},
    {"model": "b", "kind": "x", "score": 50.0, "n": 1, "note": "ok"},
)


def small() -> Table:
    return Table(
        "small", "A small table", COLUMNS, ROWS, notes=("† one note.",), caption="Caption.", marks=("†", "", "")
    )


def test_markdown_formats_cells_marks_rows_and_keeps_caption_and_notes():
    assert to_markdown(small()) == (
        "Caption.\n\n"
        "| Model | Kind | Score % | Note |\n"
        "|---|---:|---:|---:|\n"
        "| a † | X | 12.3 | ok |\n"
        "| a | Y | – | empty |\n"
        "| b | X | 50.0 | ok |\n\n"
        "† one note."
    )
    assert to_markdown(small(), caption=False, notes=False).startswith("| Model |")


def test_csv_and_json_hold_the_file_columns_at_full_precision():
    assert to_csv(small()) == "model,kind,score,n\r\na,x,12.345,3\r\na,y,,0\r\nb,x,50.0,1\r\n"
    data = to_json(small())
    json.dumps(data, allow_nan=False)  # NaN became None
    assert [c["key"] for c in data["columns"]] == ["model", "kind", "score", "n"]
    assert data["columns"][2] == {"key": "score", "label": "Score %", "higher_is_better": True}
    assert data["rows"][1] == {"model": "a", "kind": "y", "score": None, "n": 0}
    assert (data["caption"], data["notes"]) == ("Caption.", ["† one note."])


def test_frame_has_every_column_with_numbers_as_numbers():
    frame = to_frame(small(), digits=1)
    assert list(frame.columns) == ["model", "kind", "score", "n", "note"]
    assert frame["score"].tolist()[0] == 12.3 and math.isnan(frame["score"][1])
    assert frame["n"].dtype.kind == "i" and frame["model"].tolist() == ["a", "a", "b"]


def test_where_and_pivot_derive_views_without_the_source_numbers():
    only_x = small().where(kind="x")
    assert [row["model"] for row in only_x.rows] == ["a", "b"] and only_x.marks == ("†", "")
    wide = small().pivot(index="model", columns="kind", values={"score": "pct"})
    assert [c.label for c in wide.columns] == ["Model", "X pct", "Y pct"]
    assert (wide.rows[0]["model"], wide.rows[0]["x_score"]) == ("a", 12.345) and math.isnan(wide.rows[0]["y_score"])
    assert wide.rows[1]["x_score"] == 50.0 and math.isnan(wide.rows[1]["y_score"])  # b has no y: NaN
    with pytest.raises(KeyError, match="no column 'nope'"):
        small().where(nope=1)


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: Table("t", "T", COLUMNS, ({"model": "a"},)), "row 0 has keys"),
        (lambda: Table("t", "T", COLUMNS + (COLUMNS[0],), ()), "column keys must be unique"),
        (lambda: Table("t", "T", COLUMNS, ROWS, marks=("†",)), "1 marks for 3 rows"),
    ],
)
def test_an_inconsistent_table_is_refused_when_built(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_report_tables_are_the_source_of_markdown_csv_and_the_leaderboard_row():
    report = build_report(hand_results(), n_resamples=50, seed=1)
    tables = report_tables(report)
    assert list(tables) == [
        "table3",
        "statement_accuracy",
        "failure_causes_by_setting",
        "failure_causes_by_category",
        "forbidden_share",
        "dead_zone",
        "matched_deltas",
        "provenance",
        "ots",
    ]
    table3 = tables["table3"]
    assert tuple(c.key for c in table3.columns) == LEADERBOARD_COLUMNS + ("errors", "complete")
    assert table3.columns == TABLE3_COLUMNS and table3.marks == ("†", "†")
    assert to_markdown(table3) == table3_markdown(report) and to_markdown(table3) in report_markdown(report, tables)
    alpha = [r for r in hand_results() if r.model_key == "alpha"]
    assert leaderboard_row(alpha, "alpha") == {key: table3.rows[0][key] for key in LEADERBOARD_COLUMNS}
    deltas = tables["matched_deltas"]
    assert to_csv(deltas).splitlines()[0] == "model,category,pair,groups,positive,negated,delta,ci_low,ci_high"
    assert "| Model | Category | Groups | Positive | Negated | Δ | 95% CI |" in to_markdown(deltas.where(pair="all"))


def test_plots_take_tables_only(tmp_path):
    tables = report_tables(build_report(hand_results(), n_resamples=10))
    paths = [
        plot_accuracy_by_setting(tables["table3"], tmp_path / "a.png"),
        plot_statement_accuracy(tables["statement_accuracy"], tmp_path / "s.png"),
        plot_failure_causes(
            tables["failure_causes_by_setting"], tables["failure_causes_by_category"], tmp_path / "f.png"
        ),
    ]
    for path in paths:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5000


# -- the paper's layout: header rows, row groups, bold best, reference rows ---------------------------------

LAYOUT_COLUMNS = (
    Column("family", "Family", fmt=str, in_markdown=False),
    Column("model", "Model", fmt=str),
    Column("acc", "Acc.", higher_is_better=True),
    Column("err", "Err.", higher_is_better=False),
    Column("gap", "Gap"),  # no direction: never bold
)
LAYOUT_ROWS = (
    {"family": "U-Net", "model": "a", "acc": 40.0, "err": 2.0, "gap": 9.0},
    {"family": "U-Net", "model": "b", "acc": 60.04, "err": 1.0, "gap": -3.0},
    {"family": "AR", "model": "c", "acc": 59.96, "err": NAN, "gap": 1.0},
    {"family": "", "model": "people", "acc": 99.0, "err": 0.0, "gap": 0.0},
)


def layout(**changes) -> Table:
    arguments = {
        "header_rows": ((("", 1), ("Scores", 2), ("", 1)),),
        "group": "family",
        "bold_best": True,
        "references": (False, False, False, True),
    }
    return Table("t", "T", LAYOUT_COLUMNS, LAYOUT_ROWS, **(arguments | changes))


def test_header_rows_groups_and_bold_best_in_markdown():
    # Acc.: b 60.04 and c 59.96 both read 60.0, the best (people are a reference row): both bold.
    # Err.: b 1.0 is the lowest (c has none, people do not count); Gap has no direction.
    assert to_markdown(layout()) == (
        "|  | Scores |  |  |\n"
        "|---|---:|---:|---:|\n"
        "| **Model** | **Acc.** | **Err.** | **Gap** |\n"
        "| *U-Net* |  |  |  |\n"
        "| a | 40.0 | 2.0 | 9.0 |\n"
        "| b | **60.0** | **1.0** | -3.0 |\n"
        "| *AR* |  |  |  |\n"
        "| c | **60.0** | – | 1.0 |\n"
        "| people | 99.0 | 0.0 | 0.0 |"
    )
    # Within groups: U-Net's best Acc. is b, AR's only value c is alone (nothing to beat): not bold.
    by_group = to_markdown(layout(best_by_group=True, header_rows=()))
    assert "| b | **60.0** | **1.0** | -3.0 |" in by_group and "| c | 60.0 | – | 1.0 |" in by_group
    assert "**" not in to_markdown(layout(bold_best=False, header_rows=(), group=None)).split("\n", 2)[2]


def test_layout_in_json_and_flat_csv():
    data = to_json(layout())
    assert data["layout"] == {
        "header_rows": [[{"label": "", "span": 1}, {"label": "Scores", "span": 2}, {"label": "", "span": 1}]],
        "group": "family",
        "references": [3],
        "bold": [[1, "acc"], [1, "err"], [2, "acc"]],
    }
    assert to_csv(layout()).splitlines()[:2] == ["family,model,acc,err,gap", "U-Net,a,40.0,2.0,9.0"]
    assert layout().where(family="U-Net").references == (False, False)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"header_rows": ((("Scores", 3),),)}, r"header row 0 spans \[3\] \(sum 3\), but 4 columns are shown"),
        ({"group": "nope"}, "group column 'nope' is not a column"),
        ({"references": (True,)}, "1 reference flags for 4 rows"),
    ],
)
def test_an_inconsistent_layout_is_refused(changes, message):
    with pytest.raises(ValueError, match=message):
        layout(**changes)


def test_table3_groups_models_by_family_names_them_and_bolds_the_best():
    # hand_results(): alpha 1:0 50.0, 0:1 40.0, color 25.0, overall 40.0; beta 1:0 100.0, color 100.0, overall 66.7.
    report = build_report(hand_results(), n_resamples=10)
    models = {"beta": ("U-Net diffusion", "Beta 1.5"), "sd_x": ("U-Net diffusion", "SD X")}
    models |= {"alpha": ("Autoregressive", "Alpha-Pro")}
    table = report_tables(report, models)["table3"]
    lines = to_markdown(table, caption=False, notes=False).splitlines()
    # Families in the order the mapping lists them; a model it lacks would come last under "Other".
    assert [line.split(" | ")[0] for line in lines[4:]] == [
        "| *U-Net diffusion*",
        "| Beta 1.5 †",
        "| *Autoregressive*",
    ] + ["| Alpha-Pro †"]
    beta = lines[5].split(" | ")
    assert beta[1] == "**100.0**" and beta[9] == "**100.0**" and beta[15] == "**66.7**"  # 1:0, color, overall
    alpha = lines[7].split(" | ")
    assert alpha[2] == "40.0"  # 0:1: alpha's alone, nothing to compare
    assert [row["model"] for row in table.rows] == ["beta", "alpha"]  # the files keep the keys
    assert to_csv(table).splitlines()[0].endswith(",complete,family")
    assert to_csv(table).splitlines()[1].startswith("beta,") and to_csv(table).splitlines()[1].endswith(
        ",U-Net diffusion"
    )
    other = report_tables(report, {"alpha": ("Autoregressive", "Alpha-Pro")})["table3"]
    assert [row["family"] for row in other.rows] == ["Autoregressive", "Other"]


def test_the_generation_registry_gives_every_model_a_family():
    from generation.registry import FAMILY_TITLES, REGISTRY, table3_models

    assert all(spec.family in FAMILY_TITLES and spec.family for spec in REGISTRY.values())
    families = table3_models()
    assert families["sd_1_5"] == ("U-Net diffusion", "SD 1.5")
    assert families["flux_2_dev"][0] == "Diffusion / flow transformers"
    assert families["janus_pro_7b"][0] == "Autoregressive"
