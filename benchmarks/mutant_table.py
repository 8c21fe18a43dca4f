"""The table of hand-written mutations (`benchmarks/mutants.py` without `--generated`): the surviving
mutations of the audit of the leaderboard and NegVQA code, and the two findings beside it (the
verdict of an `error: ""` row, the frozen twin's constraints), each written as the exact text it
replaces, so a refactoring that moves that text fails `tests/project/test_mutants.py`."""

from __future__ import annotations

from dataclasses import dataclass

from mutant_results import Site

HOLDS_TESTS = ("tests/leaderboard/checks/test_full_rescore_policy.py",)
NEGVQA_TESTS = ("tests/judges/test_negvqa_summary.py",)
FROZEN_TESTS = ("tests/core/test_frozen.py",)


@dataclass(frozen=True)
class Mutation:
    """Replace `old` (found exactly once in `path`) by `new`; `tests` should then fail."""

    name: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]
    site: Site | None = None  # where a generated mutant changes its module (None in the table)
    wider: tuple[str, ...] = ()  # its module's importers' tests: run when `tests` all pass


TABLE: tuple[Mutation, ...] = (
    Mutation(
        "compared: the statement-count check dropped",
        "leaderboard/checks/compared_fields.py",
        '    if len(submitted.statements) != len(rescored.statements):\n        found.append(f"submitted {len(sub',
        '    if False:\n        found.append(f"submitted {len(sub',
        ("tests/leaderboard/checks/test_compared_fields.py",),
    ),
    Mutation(
        "names: mutual confusable pairs mapped to each other",
        "leaderboard/text/submitted_names.py",
        "mapping[key] = min(key, other) if mutual else other",
        "mapping[key] = other",
        ("tests/leaderboard/text/test_submitted_names.py",),
    ),
    Mutation(
        "holds: `check_rejections` counts any rejection, not only a check's (one at validation too)",
        "leaderboard/checks/full_rescore_policy.py",
        'return "spot check" if entry.verification is not None else ""',
        'return "spot check"',
        HOLDS_TESTS,
    ),
    Mutation(
        "holds: `check_rejections` counts other accounts' rejections",
        "leaderboard/checks/full_rescore_policy.py",
        "e.submitter == submitter and caught_by(e)",
        "caught_by(e)",
        HOLDS_TESTS,
    ),
    Mutation(
        "holds: `ranked_on_a_sample` also holds entries verified by a full re-score",
        "leaderboard/checks/full_rescore_policy.py",
        '        and e.verification.method == "sampled"\n',
        "",
        HOLDS_TESTS,
    ),
    Mutation(
        "negvqa: `error_rows` is the number of error kinds",
        "judges/negvqa/summary.py",
        '"error_rows": sum(errors.values()),',
        '"error_rows": len(errors),',
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: `bias_A`'s denominator counts error rows",
        "judges/negvqa/summary.py",
        '"bias_A": share(chosen["A"] - key["A"], len(answered))',
        '"bias_A": share(chosen["A"] - key["A"], len(records.negated))',
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: the originals' error rows paired (as wrong answers)",
        "judges/negvqa/accuracy.py",
        "originals = {r.question_id: r for r in original if r.error is None}",
        "originals = {r.question_id: r for r in original}",
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: `unread` over every answer, not the written replies",
        "judges/negvqa/summary.py",
        "unread = sum(r.generated_letter is None for r in replies)",
        "unread = sum(r.generated_letter is None for r in answered)",
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: `unread` over every record, error rows included",
        "judges/negvqa/summary.py",
        "unread = sum(r.generated_letter is None for r in replies)",
        "unread = sum(r.generated_letter is None for r in records.negated)",
        NEGVQA_TESTS,
    ),
    Mutation(
        "negvqa: the originals' `chosen_A` counts B",
        "judges/negvqa/accuracy.py",
        'sum(o.letter == "A" for _, o in pairs)',
        'sum(o.letter == "B" for _, o in pairs)',
        NEGVQA_TESTS,
    ),
    Mutation(
        "frozen: a field's constraints, alias and options dropped (its default kept)",
        "negt2ibench/core/frozen.py",
        "namespace[name] = copy.copy(info)",
        "namespace[name] = dataclasses.field(default_factory=info.default_factory) if info.default_factory "
        "else info.default",
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: the model's validators dropped",
        "negt2ibench/core/frozen.py",
        "    namespace.update(_validators(model))\n",
        "",
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: the model's configuration dropped (but `extra`)",
        "negt2ibench/core/frozen.py",
        "    config = ConfigDict(**model.model_config)",
        '    config = ConfigDict(extra=model.model_config.get("extra", "ignore"))',
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: a model with a rule it cannot keep twinned all the same",
        "negt2ibench/core/frozen.py",
        "    if refused:\n",
        "    if False:\n",
        FROZEN_TESTS,
    ),
    Mutation(
        "frozen: `thaw` validates the values again",
        "negt2ibench/core/frozen.py",
        "    thawed = _thawed(twin)\n",
        "    thawed = model.model_validate(dataclasses.asdict(twin), by_name=True)\n",
        FROZEN_TESTS,
    ),
    Mutation(
        'verdict: an `error: ""` row read as pass or fail (its truthiness)',
        "evaluator/results.py",
        "    return record.error is not None\n",
        "    return bool(record.error)\n",
        ("tests/evaluator/test_results.py",),
    ),
)
