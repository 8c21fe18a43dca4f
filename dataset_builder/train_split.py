"""The training split's folder (`negt2ibench build --split train`) and its check (`negt2ibench validate`).

    README.md                              a short card: training prompts, the seeds, why they are apart
    prompts/train-00000-of-00001.parquet   config "prompts", split "train" (4,800 records, ids `train_...`)
    prompts.jsonl                          the same records
    train_metadata.jsonl                   the same records, Flow-GRPO's name (its dataset reads the prompt
    test_metadata.jsonl                    and passes each line to the reward as metadata); test: the test
                                           split's 4,800, which Flow-GRPO evaluates on, never trains on
    geneval/train_metadata.jsonl           GenEval's training prompts (evaluator.geneval.train_prompts)
    geneval/test_metadata.jsonl            GenEval's 553

The records are `corpus.build_train_corpus`'s: the test split's design from another seed, with no
(objects, predicates) combination, and so no text, of the test split's. `validate_train_folder`
checks the files, every corpus invariant, and that disjointness against the test corpus rebuilt from
the seed the card names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from negt2ibench.core.atomic import atomic_folder, recover_folder

from .corpus import CORPUS_VERSION, TRAIN_PREFIX, build_corpus, record_combination
from .layout import (
    CARD_FILE,
    GENEVAL_TRAIN_DIR,
    PROMPTS_JSONL,
    TEST_METADATA,
    TRAIN_METADATA,
    TRAIN_PROMPTS_PARQUET,
)
from .records import PromptRecord
from .validate import Violation, copy_differences, find_violations

_SEEDS = re.compile(r"<!-- split: train; seed: (-?\d+); test_seed: (-?\d+) -->")

CARD = """---
configs:
- config_name: prompts
  data_files:
  - split: train
    path: prompts/train-*.parquet
---
<!-- corpus_version: {version} -->
<!-- split: train; seed: {seed}; test_seed: {test_seed} -->
# NegT2IBench training prompts

{count} prompts in the test split's design (6 categories x 8 polarity settings x 100), drawn from seed
{seed}. No prompt shares its objects and values/relations (in any order, with any polarities) with a
prompt of the test split (seed {test_seed}), so no text either; `negt2ibench validate` checks it.
Train on these, never on the test prompts: a model tuned on the test prompts scores what it memorised.
`train_metadata.jsonl` is Flow-GRPO's file; `geneval/` holds GenEval's counterpart. See docs/reward.md.
"""


def _jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def write_train_folder(
    records: Sequence[PromptRecord],
    out_dir: str | Path,
    *,
    seed: int,
    test_seed: int,
    geneval_train: Sequence[dict[str, Any]],
    geneval_test: Sequence[dict[str, Any]],
    overwrite: bool = False,
) -> Path:
    """Write the training folder atomically (as `hub.write_dataset_folder` writes the test one)."""
    from .hub import check_output_dir, write_prompt_files

    out = Path(out_dir).expanduser().absolute()
    recover_folder(out)
    check_output_dir(out, overwrite)
    with atomic_folder(out) as staging:
        write_prompt_files(records, staging, parquet=TRAIN_PROMPTS_PARQUET)
        _jsonl(staging / TRAIN_METADATA, [record.model_dump() for record in records])
        _jsonl(staging / TEST_METADATA, [record.model_dump() for record in build_corpus(test_seed)])
        _jsonl(staging / GENEVAL_TRAIN_DIR / TRAIN_METADATA, geneval_train)
        _jsonl(staging / GENEVAL_TRAIN_DIR / TEST_METADATA, geneval_test)
        text = CARD.format(version=CORPUS_VERSION, seed=seed, test_seed=test_seed, count=f"{len(records):,}")
        (staging / CARD_FILE).write_text(text, encoding="utf-8")
    return out


def is_train_folder(root: str | Path) -> bool:
    return (Path(root) / TRAIN_PROMPTS_PARQUET).is_file()


def train_violations(records: Sequence[PromptRecord], test: Sequence[PromptRecord]) -> list[Violation]:
    """A training record that is not prefixed `train_`, or whose text or combination is a test record's."""
    texts = {record.prompt: record.prompt_id for record in test}
    combinations = {record_combination(record): record.prompt_id for record in test}
    violations = []
    for record in records:
        if not record.prompt_id.startswith(TRAIN_PREFIX):
            violations.append(Violation(record.prompt_id, f"a training prompt id starts with {TRAIN_PREFIX!r}"))
        if record.prompt in texts:
            violations.append(Violation(record.prompt_id, f"has the text of test prompt {texts[record.prompt]}"))
        elif record_combination(record) in combinations:
            shared = combinations[record_combination(record)]
            violations.append(
                Violation(record.prompt_id, f"asks for the objects and predicates of test prompt {shared}")
            )
    return violations


def validate_train_folder(root: str | Path) -> tuple[list[PromptRecord], list[Violation], int | None]:
    """(records, violations, test seed) of a training folder: its files, every corpus invariant, and
    its disjointness from the test corpus of the seed its card names."""
    from .loading import load_prompts

    root = Path(root)
    violations: list[Violation] = []
    records: list[PromptRecord] = []
    try:
        records = load_prompts(root / TRAIN_PROMPTS_PARQUET)
    except Exception as error:  # noqa: BLE001 - any unreadable file is one violation
        violations.append(Violation(TRAIN_PROMPTS_PARQUET, f"unreadable ({error})"))
    for name in (PROMPTS_JSONL, TRAIN_METADATA):
        try:
            violations += copy_differences(records, load_prompts(root / name))
        except Exception as error:  # noqa: BLE001
            violations.append(Violation(name, f"unreadable or missing ({error})"))
    card = root / CARD_FILE
    seeds = _SEEDS.search(card.read_text(encoding="utf-8")) if card.is_file() else None
    if seeds is None:
        violations.append(Violation(CARD_FILE, "missing, or names no seed and test seed"))
        return records, violations, None
    test_seed = int(seeds.group(2))
    if records:
        violations += find_violations(records) + train_violations(records, build_corpus(test_seed))
    return records, violations, test_seed
