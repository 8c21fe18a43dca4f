"""The generated mutants judged harmless (equivalent): no input the code can receive tells them apart.

Each entry names its mutant by the module, the changed line's text (stripped, as the report shows it)
and the change (the report's words: `<= → <`, `condition negated`, `3 → 4`); it matches every
mutant of that module with that line and change. `benchmarks/mutants.py` does not run a listed
mutant: it counts it apart, as equivalent, and prints its reason. `tests/project/test_mutants.py`
fails on an entry that no longer names a mutant of the tree (the line was changed or moved away),
so the list cannot go stale.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Equivalent:
    """A mutant judged equivalent: MODULE's line LINE (stripped) with CHANGE made; REASON says why."""

    module: str
    line: str
    change: str
    reason: str


EQUIVALENT: tuple[Equivalent, ...] = (
    Equivalent(
        "leaderboard/checks/fresh_draw_run.py",
        "GENERATION_BATCH = 4",
        "4 → 5",
        "the fresh draw's generation batch: every image has its own seed (`plan_work`), the runner halves "
        "the batch on out-of-memory, and the draw's outcome is an accuracy with its interval; 5 images a batch "
        "instead of 4 changes memory and speed, and pixels at most by the batch drift docs/leaderboard.md calibrates "
        "(a batch of 4 against 1), which the draw's statistics absorb and no CPU test can see",
    ),
    Equivalent(
        "negt2ibench/reward_pickle.py",
        "return dict(zip(copies[:half], copies[half:], strict=True)), size, deepest + 1",
        "True → False",
        "a dict's children are its keys then its values (`_children`), one copy each or a refusal, so the "
        "two halves are always of one length and `strict` never has anything to refuse",
    ),
    Equivalent(
        "dataset_builder/corpus.py",
        "for index, (polarity, predicate, text) in enumerate(zip(polarities, draw.predicates, texts, strict=False)):",
        "False → True",
        "`render_prompt`, called just before, raises unless there is one polarity per predicate and returns one "
        "text per predicate, so the three sequences are always of one length and `strict` never has anything "
        "to refuse",
    ),
    Equivalent(
        "evaluator/models/depth.py",
        "for index, tensor in zip(indices, given, strict=True)",
        "True → False",
        "`given` is built from `indices` one for one on the line above, so the two are always of one length "
        "and `strict` never has anything to refuse",
    ),
    Equivalent(
        "evaluator/geometry.py",
        "region = (slice(int(rows_any[0]), int(rows_any[-1]) + 1), slice(int(cols_any[0]), int(cols_any[-1]) + 1))",
        "1 → 2",
        "the row (or column) past the last one holding a candidate holds none, so the candidates' box grows by "
        "an empty row or column: the same pixels face B, only the windows and the cost estimate grow "
        "(tests/evaluator/test_geometry.py checks every method gives the same pixels)",
    ),
    Equivalent(
        "evaluator/report/facts.py",
        "per_record = np.array([places[prompt_id] for prompt_id in prompt_ids], dtype=np.int64).reshape(-1, 3)",
        "1 → 2",
        "numpy (2.x, the version pinned) reads any negative size in `reshape` as the one unknown dimension, "
        "so `reshape(-2, 3)` is `reshape(-1, 3)`",
    ),
)
