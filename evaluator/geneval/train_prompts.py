"""GenEval training prompts: the templates of GenEval's 553 test prompts over other objects and
combinations, none equal to a test prompt (what `negt2ibench build --split train` writes beside
NegT2IBench's training split, in Flow-GRPO's `train_metadata.jsonl` form).

The templates and the metadata are GenEval's prompt generator's (djghosh13/geneval@af4902f,
prompts/create_prompts.py, MIT): `with_article` (:19-22), `make_plural` (:26-29), two_object
(:54-64), counting 2-4 with the exclude clause N + 1 (:70-83), colors (:89-100, no coloured
person), position with the target first (:106-117), color_attr (:121-133). single_object has no
training prompt: its 80 test prompts are every class already. A prompt is held back when its
combination is a test prompt's, whatever the order: the same pair of classes (two_object), class
and number (counting), class and colour (colors), the same scene (position: A left of B is B right
of A), the same coloured pair (color_attr).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from .config import COLORS
from .prompts import TASKS, load_geneval_prompts, metadata_problem, object_names

DEFAULT_GENEVAL_TRAIN_SEED = 43 + 1  # create_prompts.py:177 draws the test prompts with seed 43
PER_TASK = 500
NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")  # :68
POSITIONS = ("left of", "right of", "above", "below")  # :104
MIRROR = {"left of": "right of", "right of": "left of", "above": "below", "below": "above"}


def with_article(name: str) -> str:  # create_prompts.py:19-22
    return f"an {name}" if name[0] in "aeiou" else f"a {name}"


def make_plural(name: str) -> str:  # create_prompts.py:26-29
    return f"{name}es" if name[-1] in "s" else f"{name}s"


def combination(metadata: Mapping[str, Any]) -> tuple:
    """What a GenEval prompt asks for, whatever its order (see the module's docstring)."""
    tag, includes = metadata["tag"], metadata.get("include", [])
    if tag == "position":
        target, subject = includes[0]["class"], includes[1]["class"]
        relation = includes[1]["position"][0]
        return (tag, min((subject, relation, target), (target, MIRROR[relation], subject)))
    if tag == "counting":
        return (tag, includes[0]["class"], includes[0]["count"])
    return (tag, frozenset((clause["class"], clause.get("color")) for clause in includes))


def _sample(rng: np.random.Generator, tag: str, names: Sequence[str]) -> dict[str, Any]:
    """One prompt of TAG as create_prompts.py makes it (colour tasks never name a person)."""
    coloured = [name for name in names if name != "person"]
    if tag == "two_object":
        a, b = rng.choice(len(names), size=2, replace=False)
        include = [{"class": names[a], "count": 1}, {"class": names[b], "count": 1}]
        return {
            "tag": tag,
            "include": include,
            "prompt": f"a photo of {with_article(names[a])} and {with_article(names[b])}",
        }
    if tag == "counting":
        name, number = names[rng.choice(len(names))], int(rng.integers(2, 4, endpoint=True))
        return {
            "tag": tag,
            "include": [{"class": name, "count": number}],
            "exclude": [{"class": name, "count": number + 1}],
            "prompt": f"a photo of {NUMBERS[number]} {make_plural(name)}",
        }
    if tag == "colors":
        name, color = coloured[rng.choice(len(coloured))], COLORS[rng.choice(len(COLORS))]
        include = [{"class": name, "count": 1, "color": color}]
        return {"tag": tag, "include": include, "prompt": f"a photo of {with_article(color)} {name}"}
    if tag == "position":
        a, b = rng.choice(len(names), size=2, replace=False)
        relation = POSITIONS[rng.choice(len(POSITIONS))]
        include = [{"class": names[b], "count": 1}, {"class": names[a], "count": 1, "position": [relation, 0]}]
        prompt = f"a photo of {with_article(names[a])} {relation} {with_article(names[b])}"
        return {"tag": tag, "include": include, "prompt": prompt}
    a, b = rng.choice(len(coloured), size=2, replace=False)
    ca, cb = rng.choice(len(COLORS), size=2, replace=False)
    include = [
        {"class": coloured[a], "count": 1, "color": COLORS[ca]},
        {"class": coloured[b], "count": 1, "color": COLORS[cb]},
    ]
    prompt = f"a photo of {with_article(COLORS[ca])} {coloured[a]} and {with_article(COLORS[cb])} {coloured[b]}"
    return {"tag": "color_attr", "include": include, "prompt": prompt}


def geneval_train_prompts(seed: int = DEFAULT_GENEVAL_TRAIN_SEED, per_task: int = PER_TASK) -> list[dict[str, Any]]:
    """Up to PER_TASK distinct prompts for each task but single_object, none sharing a combination or a
    text with GenEval's 553 (counting has 160: 80 classes × 3 numbers, less the test's 80)."""
    names = object_names()
    test = load_geneval_prompts()
    taken = {combination(prompt.metadata) for prompt in test}
    texts = {prompt.prompt for prompt in test}
    rng = np.random.default_rng(seed)
    prompts: list[dict[str, Any]] = []
    for tag in TASKS[1:]:
        found = 0
        for _ in range(per_task * 50):  # draws, not prompts: a task with fewer combinations stops early
            sample = _sample(rng, tag, names)
            key = combination(sample)
            if key not in taken and sample["prompt"] not in texts:
                taken.add(key)
                prompts.append(sample)
                found += 1
                if found == per_task:
                    break
    return prompts


def train_prompt_violations(prompts: Iterable[Mapping[str, Any]]) -> list[str]:
    """What makes a GenEval training set unusable: metadata GenEval cannot read, or a prompt whose
    text or combination is a test prompt's."""
    test = load_geneval_prompts()
    taken = {combination(prompt.metadata) for prompt in test}
    texts = {prompt.prompt for prompt in test}
    problems = []
    for number, metadata in enumerate(prompts, start=1):
        problem = metadata_problem(metadata)
        if problem:
            problems.append(f"line {number}: not GenEval metadata ({problem})")
        elif metadata["prompt"] in texts:
            problems.append(f"line {number}: {metadata['prompt']!r} is a GenEval test prompt")
        elif combination(metadata) in taken:
            problems.append(f"line {number}: {metadata['prompt']!r} asks what a GenEval test prompt asks")
    return problems
