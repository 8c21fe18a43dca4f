"""The Score tab's pure views: the prompt grammar, a stand-in's verdict and missing weights."""

from __future__ import annotations

from PIL import Image

from dataset_builder.loading import load_prompts
from evaluator.config import PRESETS
from negt2ibench.api import Evaluator
from space.gpu_calls import gpu_scorer
from tests.helpers.space_helpers import RectanglePerception


def test_the_grammar_is_a_markdown_list_of_the_cli_grammars_words():
    from dataset_builder.grammar import GRAMMAR_HELP
    from space.tabs.score.score_views import grammar_markdown

    lines = grammar_markdown().splitlines()
    assert lines[:2] == ["Prompts follow the benchmark's grammar (lower case, one category per prompt):", ""]
    assert lines[2].startswith("- attributes (color: red orange") and lines[3] == "    - `a photo of a red cup`"
    assert [line for line in lines if line.startswith("- ")][-1].startswith("- objects are the 79 COCO classes")
    examples = [line.strip()[3:-1] for line in lines if line.startswith("    - ")]
    assert len(examples) == 6 and all(example in " ".join(GRAMMAR_HELP.split()) for example in examples)


def test_a_stand_ins_verdict_says_whose_it_is_and_missing_weights_say_how_to_get_them():
    from space.tabs.score.score_views import weights_missing
    from space.verdict_views import verdict_summary

    prompt = next(p for p in load_prompts(None) if p.prompt_id == "color_pos1_neg0_000")
    result = gpu_scorer(Evaluator(PRESETS["current"], perception=RectanglePerception()))(
        Image.new("RGB", (64, 64)), prompt, "upload", 0
    )[0]
    marked = verdict_summary(prompt, result, stand_in="RectanglePerception")
    assert marked.endswith(
        "\n\n**Not the evaluator's models:** verdicts here come from RectanglePerception, a test double this app "
        "was built with in its models' place; they say nothing about what the models would see."
    )
    assert "Not the evaluator's models" not in verdict_summary(prompt, result)
    assert weights_missing("RF-DETR Seg XL and SAM 2.1") == (
        "Scoring needs the evaluator's model weights (RF\\-DETR Seg XL and SAM 2\\.1), and they are not on this "
        "machine. Fetch them once with `negt2ibench download-models` (it needs internet access), then start this app "
        "again, or start it with `negt2ibench serve --weights-dir DIR` on a folder that `download-models --dir DIR` "
        "filled."
    )
