"""The report: result records → the paper's tables → Markdown, CSV, JSON, frames and plots.

Three layers, each using only the one before it:
1. aggregation (`keys`, `aggregate`): pure functions from `ResultRecord`s to dicts of numbers,
   collected per model by `build_report` into a `Report`;
2. tables (`tables`): each of the paper's tables built once as a `Table` of typed
   `Column`s (`report_tables`); Table 3's columns are also the leaderboard's;
3. renderers: `to_markdown`, `to_csv`, `to_json`, `to_frame` (`negt2ibench.core.table`, the one
   `Table` of the project), the PNG plots (`plots`, which take tables only) and the files of
   `negt2ibench report` (`document.write_report`).

This module re-exports the public names, so `from evaluator.report import build_report` works.
"""

from .aggregate import (
    Report,
    build_report,
    dead_zone_passes,
    failure_causes,
    matched_group_deltas,
    overall_interval,
    statement_accuracy,
    table3,
)
from .document import CSV_TABLES, REPORT_FILES, report_markdown, table3_markdown, write_report
from .inputs import InputNote, ReportInputs, read_report_inputs
from .keys import (
    ALL,
    CATEGORY_TITLES,
    MATCHED_PAIRS,
    POOLED,
    SETTING_LABELS,
    TABLE3_CATEGORIES,
    PromptKey,
    expected_images,
    group_by_model,
    model_provenance,
    parse_prompt_id,
)
from .tables import (
    LEADERBOARD_COLUMNS,
    TABLE3_COLUMNS,
    leaderboard_row,
    report_tables,
    table3_table,
)

__all__ = [
    "ALL",
    "CATEGORY_TITLES",
    "CSV_TABLES",
    "REPORT_FILES",
    "LEADERBOARD_COLUMNS",
    "MATCHED_PAIRS",
    "POOLED",
    "SETTING_LABELS",
    "TABLE3_CATEGORIES",
    "TABLE3_COLUMNS",
    "InputNote",
    "PromptKey",
    "Report",
    "ReportInputs",
    "build_report",
    "dead_zone_passes",
    "expected_images",
    "failure_causes",
    "group_by_model",
    "leaderboard_row",
    "matched_group_deltas",
    "model_provenance",
    "overall_interval",
    "parse_prompt_id",
    "read_report_inputs",
    "report_markdown",
    "report_tables",
    "statement_accuracy",
    "table3",
    "table3_markdown",
    "table3_table",
    "write_report",
]
