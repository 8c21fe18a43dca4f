"""The corpus (docs/corpus.md) and its grammar: invariants on the default corpus, determinism, parsing."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from dataset_builder.corpus import (
    CORPUS_VERSION,
    DEFAULT_SEED,
    DEFAULT_TRAIN_SEED,
    build_corpus,
    build_fresh_corpus,
    draw_groups,
    published_combinations,
    record_combination,
)
from dataset_builder.grammar import (
    PromptParseError,
    grammar_issues,
    parse_prompt,
    render_prompt,
    statement_sentence,
)
from dataset_builder.records import PromptRecord, Statement
from dataset_builder.validate import (
    corpus_violations,
    find_violations,
    record_violations,
    shared_draw_summary,
    shared_draw_violations,
)
from dataset_builder.vocabulary import CATEGORIES, CATEGORY_VOCABULARY, OBJECT_CLASSES, SETTINGS, setting_name


@pytest.fixture(scope="module")
def corpus() -> list[PromptRecord]:
    return build_corpus()


def test_size_order_and_ids(corpus):
    assert len(corpus) == 4800
    expected = [f"{c}_{setting_name(p, n)}_{k:03d}" for c in CATEGORIES for p, n in SETTINGS for k in range(100)]
    assert [r.prompt_id for r in corpus] == expected
    for record in corpus:
        assert record.group_id == f"{record.category}_load{record.load}_{record.prompt_id[-3:]}"
        assert record.load == record.num_pos + record.num_neg == len(record.statements)
        assert record.kind == ("attribute" if record.category in ("color", "material") else "relation")


def test_statements_follow_the_setting(corpus):
    for record in corpus:
        polarities = [s.polarity for s in record.statements]
        assert polarities == ["positive"] * record.num_pos + ["negated"] * record.num_neg, record.prompt_id
        assert [s.index for s in record.statements] == list(range(record.load))
        for statement in record.statements:
            assert statement.predicate in CATEGORY_VOCABULARY[record.category]
        assert len(set(record.objects)) == len(record.objects)
        assert set(record.objects) <= set(OBJECT_CLASSES)
        if record.kind == "attribute":
            assert len({s.predicate for s in record.statements}) == 1  # one value per prompt
            assert [s.subject for s in record.statements] == record.objects
            assert all(s.target is None for s in record.statements)
        else:
            assert {s.subject for s in record.statements} == {record.objects[0]}
            assert [s.target for s in record.statements] == record.objects[1:]


def test_matched_groups_differ_only_in_polarity(corpus):
    groups = defaultdict(list)
    for record in corpus:
        groups[record.group_id].append(record)
    assert len(groups) == 6 * 4 * 100
    for _group_id, members in groups.items():
        load = members[0].load
        assert sorted(m.setting for m in members) == sorted(setting_name(p, n) for p, n in SETTINGS if p + n == load)
        for member in members:
            assert member.objects == members[0].objects
            assert [s.predicate for s in member.statements] == [s.predicate for s in members[0].statements]


def test_class_balance_per_category(corpus):
    for category in CATEGORIES:
        draws = {r.group_id: r.objects for r in corpus if r.category == category}
        uses = Counter({name: 0 for name in OBJECT_CLASSES})
        uses.update(name for objects in draws.values() for name in objects)
        assert len(uses) == 79 and min(uses.values()) > 0, category  # all 79 classes in every category
        assert max(uses.values()) - min(uses.values()) <= 1, category


def test_value_balance_per_setting_and_polarity(corpus):
    for category in CATEGORIES:
        for p, n in SETTINGS:
            for polarity in ("positive", "negated"):
                counts = Counter({v: 0 for v in CATEGORY_VOCABULARY[category]})
                counts.update(
                    s.predicate
                    for r in corpus
                    if r.category == category and r.setting == setting_name(p, n)
                    for s in r.statements
                    if s.polarity == polarity
                )
                if sum(counts.values()):
                    assert max(counts.values()) - min(counts.values()) <= 1, (category, p, n, polarity, counts)


def test_no_duplicate_text_within_a_setting(corpus):
    for p, n in SETTINGS:
        texts = [r.prompt for r in corpus if r.setting == setting_name(p, n)]
        assert len(set(texts)) == len(texts)


def test_surface_forms_and_metadata_match_the_text(corpus):
    for record in corpus:
        assert record.prompt.startswith("a photo of ")
        for statement in record.statements:
            assert statement.text in record.prompt
        position = 0
        for name in record.objects:  # mention order
            found = re.search(rf"\b{re.escape(name)}\b", record.prompt[position:])
            assert found, (record.prompt_id, name)
            position += found.end()
        if record.kind == "relation":
            assert f", where the {record.objects[0]} " in record.prompt


def test_english_on_every_prompt(corpus):
    for record in corpus:
        assert grammar_issues(record.prompt) == [], record.prompt
        assert not re.search(r"\ba [aeiou]", record.prompt), record.prompt
        assert not re.search(r"\ban [^aeiou]", record.prompt), record.prompt
        assert not re.search(r"\ban? (?:[a-z-]+ )?(?:skis|scissors)\b", record.prompt), record.prompt
        assert "a a " not in record.prompt
    plural_subjects = [r for r in corpus if r.kind == "relation" and r.objects[0] in ("skis", "scissors")]
    assert plural_subjects, "the default corpus should exercise plural subjects"
    for record in plural_subjects:
        assert all(s.text.startswith("are ") for s in record.statements)


def test_grammar_lint_catches_the_papers_mistakes():
    assert grammar_issues("a photo of a apple")
    assert grammar_issues("a photo of an cup")
    assert grammar_issues("a photo of a skis and a bench")
    assert grammar_issues("a photo of a red scissors")
    assert grammar_issues("a photo of skis and a bench, where the skis is near the bench")
    assert grammar_issues("a photo of a a cup")
    assert grammar_issues("a photo of an orange orange") == []
    assert grammar_issues("a photo of a glass wine glass, glass skis, and a non-glass sink") == []
    assert grammar_issues("a photo of a non-orange umbrella") == []


def test_render_examples_from_the_design():
    assert render_prompt("attribute", ["cup"], ["positive"], ["red"]) == ("a photo of a red cup", ["a red cup"])
    assert render_prompt("attribute", ["cup"], ["negated"], ["orange"])[0] == "a photo of a non-orange cup"
    assert render_prompt("attribute", ["cup"], ["positive"], ["orange"])[0] == "a photo of an orange cup"
    prompt, texts = render_prompt(
        "attribute",
        ["bus", "knife", "sandwich", "toilet"],
        ["positive", "positive", "negated", "negated"],
        ["plastic"] * 4,
    )
    assert prompt == "a photo of a plastic bus, a plastic knife, a non-plastic sandwich, and a non-plastic toilet"
    assert texts[2] == "a non-plastic sandwich"
    prompt, texts = render_prompt(
        "relation",
        ["laptop", "zebra", "backpack", "surfboard", "carrot"],
        ["positive", "positive", "negated", "negated"],
        ["right of", "right of", "below", "right of"],
    )
    assert prompt == (
        "a photo of a laptop, a zebra, a backpack, a surfboard, and a carrot, where the laptop is "
        "right of the zebra, is right of the backpack, is not below the surfboard, and is not right of "
        "the carrot"
    )
    assert texts == [
        "is right of the zebra",
        "is right of the backpack",
        "is not below the surfboard",
        "is not right of the carrot",
    ]
    prompt, texts = render_prompt("relation", ["skis", "bench"], ["negated"], ["bigger than"])
    assert prompt == "a photo of skis and a bench, where the skis are not bigger than the bench"
    assert texts == ["are not bigger than the bench"]
    assert render_prompt("attribute", ["skis"], ["positive"], ["red"])[1] == ["red skis"]
    assert render_prompt("attribute", ["scissors"], ["negated"], ["red"])[1] == ["non-red scissors"]
    for noun in ("apple", "airplane", "elephant", "umbrella", "oven", "orange"):
        assert render_prompt("relation", [noun, "cup"], ["positive"], ["near"])[0].startswith(f"a photo of an {noun}")


def test_parse_round_trip_on_every_prompt(corpus):
    for record in corpus:
        parsed = parse_prompt(record.prompt)
        assert parsed.objects == record.objects, record.prompt_id
        assert parsed.statements == record.statements, record.prompt_id
        assert (parsed.category, parsed.kind, parsed.setting, parsed.load) == (
            record.category,
            record.kind,
            record.setting,
            record.load,
        )
        assert parsed.prompt_id == parsed.group_id == "custom"


def test_parse_is_lenient_on_case_space_and_full_stop():
    parsed = parse_prompt("  A photo of a Laptop and a TV remote,  where the laptop IS NOT left of the tv remote. ")
    assert parsed.category == "directional"
    assert parsed.objects == ["laptop", "tv remote"]
    assert parsed.statements[0].polarity == "negated" and parsed.statements[0].predicate == "left of"


def test_parse_multiword_subject_and_objects():
    parsed = parse_prompt(
        "a photo of a tv, a tv remote, and a hot dog, where the tv remote is far from the tv "
        "and is not near the hot dog"
    )
    assert [s.subject for s in parsed.statements] == ["tv remote", "tv remote"]
    assert [s.target for s in parsed.statements] == ["tv", "hot dog"]
    assert parsed.category == "proximity"
    assert [s.polarity for s in parsed.statements] == ["positive", "negated"]


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a red cup", "must start with"),
        ("a photo of a cup", "states nothing"),
        ("a photo of an orange", "states nothing"),
        ("a photo of a red cup and a wooden chair", "one category"),
        ("a photo of a dog and a cat, where the dog is near the cat and is left of the cat", "one relation"),
        ("a photo of a dog and a cat, where the dog is beside the cat", "cannot read"),
        ("a photo of a dog and a cat, where the dog is near the horse", "not in the object list"),
        ("a photo of a dog and a cat, where the horse is near the cat", "listed objects"),
        ("a photo of a red dog and a cat, where the dog is near the cat", "not both"),
        ("a photo of a unicorn", "cannot read"),
        ("a photo of a dog and a dog, where the dog is near the dog", "once"),
        ("a photo of a dog and a cat, where the dog is near the cat and is far from the dog", "itself"),
    ],
)
def test_parse_errors_show_the_grammar(text, problem):
    with pytest.raises(PromptParseError) as caught:
        parse_prompt(text)
    assert problem in caught.value.problem
    assert "a photo of a non-red cup" in str(caught.value)  # the grammar with examples
    assert isinstance(caught.value, ValueError)


def test_statement_sentence(corpus):
    record = parse_prompt("a photo of a laptop and a surfboard, where the laptop is not below the surfboard")
    assert statement_sentence(record, record.statements[0]) == "the laptop is not below the surfboard"
    record = parse_prompt("a photo of a non-red cup")
    assert statement_sentence(record, record.statements[0]) == "a non-red cup"
    record = parse_prompt("a photo of skis and a bench, where the skis are near the bench")
    assert statement_sentence(record, record.statements[0]) == "the skis are near the bench"


@pytest.mark.slow
def test_determinism_and_seed_sensitivity(corpus):
    assert build_corpus(DEFAULT_SEED) == corpus
    other = build_corpus(DEFAULT_SEED + 1)
    assert [r.prompt for r in other] != [r.prompt for r in corpus]
    assert find_violations(other) == []  # every invariant holds for another seed too


def test_validator_finds_nothing_on_the_default_corpus(corpus):
    assert find_violations(corpus) == []


def test_validator_reports_broken_records_by_prompt_id(corpus):
    record = corpus[0]
    wrong_text = record.model_copy(update={"prompt": record.prompt.replace("a ", "an ", 1)})
    assert record_violations(wrong_text)
    statement = record.statements[0]
    flipped = record.model_copy(update={"statements": [statement.model_copy(update={"polarity": "negated"})]})
    assert any("polarities" in p for p in record_violations(flipped))
    broken = list(corpus)
    broken[5] = broken[5].model_copy(
        update={"prompt": broken[4].prompt, "objects": broken[4].objects, "statements": broken[4].statements}
    )
    where = {v.where for v in find_violations(broken)}
    assert broken[5].prompt_id in where and broken[4].prompt_id in where
    # a class overused within a category breaks balance; a missing record breaks counts and groups
    messages = " ".join(str(v) for v in corpus_violations(broken[:-1]))
    assert "4799 prompts" in messages and "99 prompts" in messages


def test_bad_seed_type():
    with pytest.raises(TypeError):
        build_corpus("7")  # type: ignore[arg-type]


def test_group_draws_are_balanced_alone():
    draws = draw_groups("material", seed=11)
    assert len(draws) == 400
    for load in (1, 2, 3, 4):
        values = Counter(d.predicates[0] for d in draws if d.load == load)
        assert set(values.values()) == {25}
    statement = Statement(index=0, polarity="positive", subject="cup", predicate="red", text="a red cup")
    assert statement.target is None


def test_object_draws_are_shared_across_the_categories_of_a_kind(corpus):
    by_id = {r.prompt_id: r for r in corpus}
    for family in (("color", "material"), ("directional", "proximity", "comparative", "depth")):
        for p, n in SETTINGS:
            for k in range(100):
                ids = [f"{category}_{setting_name(p, n)}_{k:03d}" for category in family]
                assert len({tuple(by_id[i].objects) for i in ids}) == 1, ids
    assert shared_draw_summary(corpus) == [
        {"categories": ("color", "material"), "positions": 800, "shared": 800},
        {"categories": ("directional", "proximity", "comparative", "depth"), "positions": 800, "shared": 800},
    ]
    assert CORPUS_VERSION == "2"


def test_validator_reports_unshared_draws_by_prompt_id(corpus):
    # depth drawn on its own (another seed): balanced, matched and unique by itself, but not shared
    other = {r.prompt_id: r for r in build_corpus(DEFAULT_SEED + 1) if r.category == "depth"}
    mixed = [other.get(r.prompt_id, r) for r in corpus]
    violations = find_violations(mixed)
    assert violations == shared_draw_violations(mixed)  # nothing else is wrong
    where = {v.where for v in violations}
    assert "depth_pos0_neg1_000" in where and all(w.startswith("depth_") for w in where)
    first = next(v for v in violations if v.where == "depth_pos0_neg1_000")
    assert "directional_pos0_neg1_000's" in first.message
    assert len(where) == sum(1 for r in corpus if r.category == "depth" and other[r.prompt_id].objects != r.objects)
    summary = shared_draw_summary(mixed)[1]
    assert summary["positions"] == 800 and summary["shared"] == 800 - len(where)


def test_a_fresh_corpus_is_the_seeds_corpus_with_its_ids_prefixed_and_never_a_published_seed():
    seed = 2**32 + 5
    fresh, plain = build_fresh_corpus(seed), build_corpus(seed)
    assert [r.prompt for r in fresh] == [r.prompt for r in plain]  # exactly `negt2ibench build --seed SEED`'s draws
    assert [r.prompt_id for r in fresh] == [f"fresh_{r.prompt_id}" for r in plain]
    assert all(r.group_id.startswith("fresh_") for r in fresh)
    for published in (DEFAULT_SEED, DEFAULT_TRAIN_SEED):
        with pytest.raises(ValueError, match="a seed other than the published splits'"):
            build_fresh_corpus(published)
    combinations = published_combinations()
    assert len(combinations) <= 2 * 2400  # each split's 2,400 (objects, predicates) draws, shared by polarities
    assert all(record_combination(r) in combinations for r in build_corpus(DEFAULT_SEED))
