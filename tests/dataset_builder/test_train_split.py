"""The training split: `negt2ibench build --split train` and what `negt2ibench validate` checks on it."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dataset_builder.corpus import DEFAULT_SEED, build_corpus, build_train_corpus, record_combination
from dataset_builder.train_split import train_violations, write_train_folder
from dataset_builder.validate import Violation, find_violations
from evaluator.geneval.prompts import load_geneval_prompts
from negt2ibench.cli import main

TEST = build_corpus()
TRAIN = build_train_corpus()


def asks_for(record) -> tuple:
    """What a prompt asks for, written here apart from the product's `combination`: its category and the
    multisets of its objects and of its statements' values / predicates (order and polarity dropped)."""
    objects = frozenset(Counter(record.objects).items())
    predicates = frozenset(Counter(statement.predicate for statement in record.statements).items())
    return (record.category, objects, predicates)


@pytest.mark.slow
def test_the_train_split_is_the_same_design_and_shares_nothing_with_the_test_split():
    assert len(TRAIN) == len(TEST) == 4800 and find_violations(TRAIN) == []
    assert all(record.prompt_id.startswith("train_") and record.group_id.startswith("train_") for record in TRAIN)
    assert not {r.prompt for r in TRAIN} & {r.prompt for r in TEST}
    assert not {asks_for(r) for r in TRAIN} & {asks_for(r) for r in TEST}  # the test's own oracle
    # Another seed, not a relabelling: most cells hold other objects than the test's.
    same_objects = sum(a.objects == b.objects for a, b in zip(TRAIN, TEST, strict=True))
    assert same_objects < 100
    assert [r.prompt_id.removeprefix("train_") for r in TRAIN] == [r.prompt_id for r in TEST]
    with pytest.raises(ValueError, match="another seed"):
        build_train_corpus(DEFAULT_SEED)


def test_a_combination_is_the_same_in_any_order_or_polarity():
    color = {r.prompt_id: r for r in TEST}
    # pos1_neg1 and pos2_neg0 of one group: other polarities, one combination.
    assert record_combination(color["color_pos1_neg1_000"]) == record_combination(color["color_pos2_neg0_000"])
    swapped = color["color_pos2_neg0_000"].model_copy(update={"objects": color["color_pos2_neg0_000"].objects[::-1]})
    assert record_combination(swapped) == record_combination(color["color_pos2_neg0_000"])


def test_a_relation_prompts_combination_is_the_same_whatever_the_order_of_its_statements():
    record = next(r for r in TEST if r.kind == "relation" and len({s.predicate for s in r.statements}) > 1)
    reordered = record.model_copy(update={"statements": list(reversed(record.statements))})
    assert [s.predicate for s in reordered.statements] != [s.predicate for s in record.statements]
    assert record_combination(reordered) == record_combination(record)  # the product's rule ...
    assert asks_for(reordered) == asks_for(record)  # ... agrees with the oracle


@pytest.mark.slow
def test_build_and_validate_a_train_folder(tmp_path, capsys):
    out = tmp_path / "train"
    assert main(["build", "--split", "train", "--out", str(out)]) == 0
    assert main(["validate", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "OK:" in printed and "4800 valid training prompts" in printed and "2160 GenEval training prompts" in printed
    lines = (out / "train_metadata.jsonl").read_text().splitlines()
    assert [json.loads(line)["prompt_id"] for line in lines] == [r.prompt_id for r in TRAIN]
    assert all("prompt" in json.loads(line) for line in lines)  # Flow-GRPO's dataset reads item['prompt']
    assert len((out / "geneval" / "test_metadata.jsonl").read_text().splitlines()) == 553


@pytest.mark.slow
def test_validate_names_a_training_prompt_that_is_a_test_prompt(tmp_path, capsys):
    leaked = TEST[5].model_copy(
        update={"prompt_id": "train_" + TEST[5].prompt_id, "group_id": "train_" + TEST[5].group_id}
    )
    records = [leaked if r.prompt_id == leaked.prompt_id else r for r in TRAIN]
    geneval_test = [dict(p.metadata) for p in load_geneval_prompts()]
    out = write_train_folder(
        records, tmp_path / "t", seed=2027, test_seed=DEFAULT_SEED, geneval_train=geneval_test[:2], geneval_test=[]
    )
    assert main(["validate", str(out)]) == 1
    printed = capsys.readouterr().out
    assert f"{leaked.prompt_id}: has the text of test prompt {TEST[5].prompt_id}" in printed
    assert "geneval/train_metadata.jsonl: line 1: 'a photo of a bench' is a GenEval test prompt" in printed
    assert train_violations([TEST[0]], TEST)[0].message == "a training prompt id starts with 'train_'"


def test_the_train_split_needs_another_seed(capsys):
    assert main(["build", "--split", "train", "--seed", str(DEFAULT_SEED), "--out", "unused"]) == 2
    assert "another seed" in capsys.readouterr().err


def test_each_fault_of_a_training_record_is_named_and_the_training_split_has_none():
    # Fast (the corpora are built once above): `validate` rests on `train_violations`, whose own tests
    # run the slow build; a check that flagged every record, or none, must fail here.
    assert train_violations(TRAIN, TEST) == []
    test = TEST[0]
    unprefixed = TRAIN[0].model_copy(update={"prompt_id": TRAIN[0].prompt_id.removeprefix("train_")})
    same_text = test.model_copy(update={"prompt_id": "train_" + test.prompt_id})
    same_ask = test.model_copy(update={"prompt_id": "train_x", "prompt": "a text no test prompt has"})
    found = [(v.where, v.message) for v in train_violations([unprefixed, same_text, same_ask], TEST)]
    assert found[:2] == [
        (unprefixed.prompt_id, "a training prompt id starts with 'train_'"),
        (same_text.prompt_id, f"has the text of test prompt {test.prompt_id}"),
    ]
    # the test prompt named is one asking for the same (another polarity of its group may be named)
    where, message = found[2]
    named = {r.prompt_id: r for r in TEST}[message.removeprefix("asks for the objects and predicates of test prompt ")]
    assert len(found) == 3 and where == "train_x" and asks_for(named) == asks_for(test)


def test_validating_a_small_train_folder_reads_every_copy_and_checks_each_rule(tmp_path):
    # Fast (a dozen records): each file is read, and the violations are the record checks, the
    # disjointness and the copies' differences, each once (the full folder's run is slow, above).
    from dataset_builder.train_split import TRAIN_METADATA, validate_train_folder

    leaked = TEST[20].model_copy(  # a test prompt under a training id no other record has
        update={"prompt_id": "train_" + TEST[20].prompt_id, "group_id": "train_" + TEST[20].group_id}
    )
    records = [*TRAIN[:11], leaked]
    out = write_train_folder(
        records, tmp_path / "t", seed=2027, test_seed=DEFAULT_SEED, geneval_train=[], geneval_test=[]
    )
    read, violations, test_seed = validate_train_folder(out)
    assert read == records and test_seed == DEFAULT_SEED
    leak = train_violations(records, TEST)
    assert leak and all(v.where == leaked.prompt_id for v in leak)
    assert violations == find_violations(records) + leak  # the copies agree: the records' rules, then the leak

    lines = (out / "prompts.jsonl").read_text().splitlines()
    changed = json.loads(lines[3]) | {"prompt": "a text the parquet split does not have"}
    (out / "prompts.jsonl").write_text("\n".join([*lines[:3], json.dumps(changed), *lines[4:]]) + "\n")
    (out / TRAIN_METADATA).unlink()
    _, violations, _ = validate_train_folder(out)
    assert violations[:2] == [
        Violation(records[3].prompt_id, "prompts.jsonl differs from the parquet split in prompt"),
        violations[1],
    ]
    assert violations[1].where == TRAIN_METADATA and violations[1].message.startswith("unreadable or missing")
    assert violations[2:] == find_violations(records) + leak
