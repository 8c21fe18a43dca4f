"""GenEval's training prompts against its prompt generator (djghosh13/geneval@af4902f,
prompts/create_prompts.py, cited by line) and its 553 test prompts."""

from __future__ import annotations

from collections import Counter

from evaluator.geneval.prompts import load_geneval_prompts, metadata_problem
from evaluator.geneval.train_prompts import (
    combination,
    geneval_train_prompts,
    make_plural,
    train_prompt_violations,
    with_article,
)

TEST = [dict(prompt.metadata) for prompt in load_geneval_prompts()]


def test_the_templates_are_create_prompts():
    # :19-22 "an" before a vowel letter only; :26-29 "es" after an s, else "s".
    assert (with_article("apple"), with_article("umbrella"), with_article("hair drier")) == (
        "an apple",
        "an umbrella",
        "a hair drier",
    )
    assert (make_plural("bus"), make_plural("skis"), make_plural("dog")) == ("buses", "skises", "dogs")
    # Every training prompt's text is what its template (:106-117) makes of its metadata.
    prompts = geneval_train_prompts()
    for metadata in prompts:
        include = metadata["include"]
        if metadata["tag"] == "position":
            target, subject = include[0]["class"], include[1]["class"]
            expected = f"a photo of {with_article(subject)} {include[1]['position'][0]} {with_article(target)}"
            assert metadata["prompt"] == expected
        if metadata["tag"] == "counting":
            assert metadata["exclude"] == [{"class": include[0]["class"], "count": include[0]["count"] + 1}]


def test_training_prompts_never_ask_what_a_test_prompt_asks():
    prompts = geneval_train_prompts()
    assert Counter(p["tag"] for p in prompts) == {
        "two_object": 500,
        "colors": 500,
        "position": 500,
        "color_attr": 500,
        "counting": 160,  # 80 classes x {2, 3, 4} less the test's 80
    }
    assert all(metadata_problem(p) is None for p in prompts)
    assert train_prompt_violations(prompts) == []
    assert len({combination(p) for p in prompts}) == len(prompts)
    assert not any(p["prompt"] == t["prompt"] for p in prompts for t in TEST[:50])
    assert not any(p["include"][0]["class"] == "person" for p in prompts if p["tag"] in ("colors", "color_attr"))
    assert len(train_prompt_violations(TEST)) == 553


def test_a_position_scene_is_the_same_seen_from_either_object():
    dog_left_of_cat = {
        "tag": "position",
        "include": [{"class": "cat", "count": 1}, {"class": "dog", "count": 1, "position": ["left of", 0]}],
        "prompt": "a photo of a dog left of a cat",
    }
    cat_right_of_dog = {
        "tag": "position",
        "include": [{"class": "dog", "count": 1}, {"class": "cat", "count": 1, "position": ["right of", 0]}],
        "prompt": "a photo of a cat right of a dog",
    }
    assert combination(dog_left_of_cat) == combination(cat_right_of_dog)


def test_colour_prompts_ask_for_one_of_each_object_as_genevals_do():
    # "a photo of a red cup and a blue bowl": one of each, as every color_attr prompt of GenEval's 553
    # says in its metadata (read from GenEval's file here, not from the training code)
    shapes = {
        tuple((part["count"], "color" in part) for part in prompt.metadata["include"])
        for prompt in load_geneval_prompts()
        if prompt.tag == "color_attr"
    }
    assert shapes == {((1, True), (1, True))}
    trained = [prompt for prompt in geneval_train_prompts() if prompt["tag"] == "color_attr"]
    assert trained and all(
        [(part["count"], "color" in part) for part in prompt["include"]] == [(1, True), (1, True)] for prompt in trained
    )
