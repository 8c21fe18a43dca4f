"""Hand-built result records for the report tests (test doubles: no scorer involved).

`hand_results()` is a small set whose numbers are worked out by hand in the tests:

model alpha (hash h1)
  color_pos1_neg0_000  s0 pass                      s1 fail (wrong_value)
  color_pos0_neg1_000  s0 fail (forbidden_rendered)  s1 fail (forbidden_rendered)
  color_pos1_neg0_001  s0 ERROR (not scored)
  depth_pos1_neg0_000  s0 pass                      s1 fail (dead_zone)
  depth_pos0_neg1_000  s0 pass (dead-zone pass)     s1 pass     s2 fail (target_missing)
  directional_pos2_neg2_003 s0 fail: pos ok, pos subject_missing, neg ok (dead-zone pass), neg forbidden_rendered
model beta (hash h9)
  color_pos1_neg0_000  s0 pass
  material_pos1_neg1_002 s0 fail: pos ok, neg forbidden_rendered;  s1 pass
"""

from __future__ import annotations

from evaluator.results import ResultRecord, StatementResult


def statement(
    index: int, polarity: str, satisfied: bool, cause: str | None = None, dead_zone_pass: bool = False
) -> StatementResult:
    return StatementResult(
        index=index, polarity=polarity, satisfied=satisfied, cause=cause, dead_zone_pass=dead_zone_pass
    )


def record(
    prompt_id: str,
    model: str,
    sample: int,
    statements: list[StatementResult],
    error: str | None = None,
    config_hash: str = "h1",
    version: str = "1.0.0",
) -> ResultRecord:
    passed = error is None and all(s.satisfied for s in statements)
    return ResultRecord(
        prompt_id=prompt_id,
        model_key=model,
        sample_index=sample,
        passed=passed,
        statements=statements,
        evaluator_version=version,
        config_hash=config_hash,
        error=error,
    )


def pos_ok(index: int = 0) -> StatementResult:
    return statement(index, "positive", True)


def neg_ok(index: int = 0, dead_zone_pass: bool = False) -> StatementResult:
    return statement(index, "negated", True, dead_zone_pass=dead_zone_pass)


def hand_results() -> list[ResultRecord]:
    a = "alpha"
    alpha = [
        record("color_pos1_neg0_000", a, 0, [pos_ok()]),
        record("color_pos1_neg0_000", a, 1, [statement(0, "positive", False, "wrong_value")]),
        record("color_pos0_neg1_000", a, 0, [statement(0, "negated", False, "forbidden_rendered")]),
        record("color_pos0_neg1_000", a, 1, [statement(0, "negated", False, "forbidden_rendered")]),
        # An error row: its statement must not count anywhere.
        record(
            "color_pos1_neg0_001",
            a,
            0,
            [statement(0, "positive", False, "subject_missing")],
            error="CUDA out of memory",
        ),
        record("depth_pos1_neg0_000", a, 0, [pos_ok()]),
        record("depth_pos1_neg0_000", a, 1, [statement(0, "positive", False, "dead_zone")]),
        record("depth_pos0_neg1_000", a, 0, [neg_ok(dead_zone_pass=True)]),
        record("depth_pos0_neg1_000", a, 1, [neg_ok()]),
        record("depth_pos0_neg1_000", a, 2, [statement(0, "negated", False, "target_missing")]),
        record(
            "directional_pos2_neg2_003",
            a,
            0,
            [
                pos_ok(0),
                statement(1, "positive", False, "subject_missing"),
                neg_ok(2, dead_zone_pass=True),
                statement(3, "negated", False, "forbidden_rendered"),
            ],
        ),
    ]
    b = "beta"
    beta = [
        record("color_pos1_neg0_000", b, 0, [pos_ok()], config_hash="h9"),
        record(
            "material_pos1_neg1_002",
            b,
            0,
            [pos_ok(0), statement(1, "negated", False, "forbidden_rendered")],
            config_hash="h9",
        ),
        record("material_pos1_neg1_002", b, 1, [pos_ok(0), neg_ok(1)], config_hash="h9"),
    ]
    return alpha + beta


def sweep_files(folder, models: int = 2, every: int = 12, samples: int = 2, seed: int = 0) -> list[str]:
    """Result files of a seeded sweep (the corpus's every EVERY-th prompt × SAMPLES images, each prompt
    object detected or not with a seeded box, random verdicts), one file per model, written into
    FOLDER under relative names, with the lines a report leaves out or keeps apart: an error row,
    a line that is not JSON, a record of no benchmark image, a second, different result of one
    image, and a torn last line. Returns the file names."""
    import random

    from dataset_builder.loading import load_prompts
    from evaluator.results import ObjectResult

    rng = random.Random(seed)
    prompts = load_prompts(None)[::every]
    names = []
    for m in range(models):
        lines = []
        for prompt in prompts:
            for sample in range(samples):
                objects = []
                for name in dict.fromkeys(prompt.objects):
                    x0, y0 = rng.uniform(0, 800), rng.uniform(0, 800)
                    box = [x0, y0, x0 + rng.uniform(10, 220), y0 + rng.uniform(10, 220)]
                    present = rng.random() < 0.85
                    objects.append(ObjectResult(name=name, present=present, confidence=rng.random(), box=box))
                statements = []
                for s in prompt.statements:
                    ok = rng.random() < 0.6
                    cause = None if ok else ("forbidden_rendered" if s.polarity == "negated" else "wrong_value")
                    dead = ok and s.polarity == "negated" and rng.random() < 0.3
                    statements.append(statement(s.index, s.polarity, ok, cause, dead_zone_pass=dead))
                result = record(prompt.prompt_id, f"model_{m}", sample, statements, config_hash=f"h{m}")
                lines.append(result.model_copy(update={"objects": objects}).model_dump_json())
        error_row = record(prompts[1].prompt_id, f"model_{m}", samples, [], "bad image: truncated PNG", f"h{m}")
        stray = record("color_pos0_neg1_999", f"model_{m}", 0, [pos_ok()], config_hash=f"h{m}")
        other = record(prompts[0].prompt_id, f"model_{m}", 0, [pos_ok()], config_hash=f"h{m}")
        lines[5:5] = [error_row.model_dump_json(), "{not json", stray.model_dump_json(), other.model_dump_json()]
        name = f"model_{m}.jsonl"
        (folder / name).write_text("\n".join(lines) + "\n" + lines[-1][: len(lines[-1]) // 2], encoding="utf-8")
        names.append(name)
    return names
