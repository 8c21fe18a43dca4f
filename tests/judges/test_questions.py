"""Judge question wording, pinned word for word per mode (docs/validation.md), and the `judge --list` registry."""

from __future__ import annotations

import pytest

from dataset_builder.grammar import parse_prompt
from judges.questions import Question, object_question, questions_for, statement_question, whole_question
from judges.registry import ADAPTERS, REGISTRY, custom_spec, get_spec, registry_table
from negt2ibench.core.errors import UserError


def prompt(text: str, prompt_id: str = "p_000"):
    return parse_prompt(text).model_copy(update={"prompt_id": prompt_id, "group_id": prompt_id})


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("cup", "Is there a cup in the image?"),
        ("apple", "Is there an apple in the image?"),
        ("orange", "Is there an orange in the image?"),
        ("tv remote", "Is there a tv remote in the image?"),
        ("skis", "Are there skis in the image?"),
        ("scissors", "Are there scissors in the image?"),
    ],
)
def test_object_questions_use_the_right_article_and_verb(name, question):
    assert object_question(name) == question


@pytest.mark.parametrize(
    ("text", "affirmative", "negated"),
    [
        ("a photo of a non-red cup", "Is the cup red?", "Is the cup not red?"),
        ("a photo of non-orange skis", "Are the skis orange?", "Are the skis not orange?"),
        ("a photo of a non-glass vase", "Is the vase made of glass?", "Is the vase not made of glass?"),
        ("a photo of a non-wooden chair", "Is the chair made of wood?", "Is the chair not made of wood?"),
        (
            "a photo of a backpack and a fork, where the backpack is not left of the fork",
            "Is the backpack left of the fork?",
            "Is the backpack not left of the fork?",
        ),
        (
            "a photo of scissors and a bench, where the scissors are not bigger than the bench",
            "Are the scissors bigger than the bench?",
            "Are the scissors not bigger than the bench?",
        ),
        (
            "a photo of a tv remote and a cup, where the tv remote is not in front of the cup",
            "Is the tv remote in front of the cup?",
            "Is the tv remote not in front of the cup?",
        ),
    ],
)
def test_statement_questions_affirmative_and_negated(text, affirmative, negated):
    statement = prompt(text).statements[0]
    assert statement_question(statement, negated_form=False) == affirmative
    assert statement_question(statement, negated_form=True) == negated


def test_whole_mode_asks_the_prompt_itself():
    record = prompt("a photo of a red cup and a non-red bowl")
    assert questions_for(record, "whole") == [
        Question("prompt", 'Does this image show "a photo of a red cup and a non-red bowl"? Answer yes or no.')
    ]
    assert whole_question("a photo of skis") == 'Does this image show "a photo of skis"? Answer yes or no.'


RELATION = (
    "a photo of a backpack, a fork, and an apple, where the backpack is left of the fork and is not right of the apple"
)


def test_pos_mode_asks_negated_statements_affirmatively_and_inverts_them():
    assert questions_for(prompt(RELATION), "pos") == [
        Question("object:backpack", "Is there a backpack in the image?"),
        Question("object:fork", "Is there a fork in the image?"),
        Question("object:apple", "Is there an apple in the image?"),
        Question("statement:0", "Is the backpack left of the fork?"),
        Question("statement:1", "Is the backpack right of the apple?", inverted=True),
    ]


def test_neg_mode_changes_only_the_negated_statements():
    pos, neg = questions_for(prompt(RELATION), "pos"), questions_for(prompt(RELATION), "neg")
    assert neg[:4] == pos[:4]
    assert neg[4] == Question("statement:1", "Is the backpack not right of the apple?", inverted=False)


def test_attribute_prompt_in_each_mode():
    record = prompt("a photo of a red cup and a non-blue bowl")
    assert [(q.text, q.inverted) for q in questions_for(record, "pos")] == [
        ("Is there a cup in the image?", False),
        ("Is there a bowl in the image?", False),
        ("Is the cup red?", False),
        ("Is the bowl blue?", True),
    ]
    assert [(q.text, q.inverted) for q in questions_for(record, "neg")][3] == ("Is the bowl not blue?", False)


def test_satisfaction_inverts_only_inverted_questions():
    assert Question("statement:1", "Is the bowl blue?", inverted=True).satisfaction(0.8) == pytest.approx(0.2)
    assert Question("statement:0", "Is the cup red?").satisfaction(0.8) == 0.8


def test_unknown_mode_is_an_error():
    with pytest.raises(ValueError, match="unknown judge mode 'both'"):
        questions_for(prompt("a photo of a red cup"), "both")


# -- registry ------------------------------------------------------------------------------------

PAPER_JUDGES = {
    "qwen3_vl_8b": ("Qwen/Qwen3-VL-8B-Instruct", "8B", "qwen_vl"),
    "qwen3_vl_32b": ("Qwen/Qwen3-VL-32B-Instruct", "32B", "qwen_vl"),
    "qwen2_5_vl_7b": ("Qwen/Qwen2.5-VL-7B-Instruct", "7B", "qwen_vl"),
    "internvl3_8b": ("OpenGVLab/InternVL3-8B-hf", "8B", "internvl"),
    "internvl3_5_8b": ("OpenGVLab/InternVL3_5-8B-HF", "8B", "internvl"),
    "internvl3_5_38b": ("OpenGVLab/InternVL3_5-38B-HF", "38B", "internvl"),
}


def test_registry_holds_the_paper_judges_with_hub_ids_and_sizes():
    for key, (hub_id, params, family) in PAPER_JUDGES.items():
        spec = get_spec(key)
        assert (spec.key, spec.hub_id, spec.params, spec.family) == (key, hub_id, params, family)
    assert list(REGISTRY) == [*PAPER_JUDGES, "vqascore"]
    table = registry_table()
    assert [row["key"] for row in table.rows] == [*PAPER_JUDGES, "vqascore"]
    assert table.rows[0]["adapter"] == "judges.transformers_judge:TransformersJudge"


def test_every_family_has_an_adapter_target():
    for spec in REGISTRY.values():
        assert ADAPTERS.target(spec.family) in (
            "judges.transformers_judge:TransformersJudge",
            "judges.vqascore:VQAScoreJudge",
        )


def test_unknown_key_suggests_near_matches():
    with pytest.raises(UserError, match=r"unknown judge 'qwen3vl_8b'\. Did you mean: qwen3_vl_8b") as error:
        get_spec("qwen3vl_8b")
    assert "--model-id" in str(error.value) and "internvl3_5_38b" in str(error.value)


def test_config_hash_changes_with_mode_dtype_and_templates():
    spec = get_spec("qwen3_vl_8b")
    base = spec.config_hash(mode="pos", dtype="bfloat16", templates={"object": "a"})
    assert base == spec.config_hash(mode="pos", dtype="bfloat16", templates={"object": "a"})
    assert len(base) == 16
    assert base != spec.config_hash(mode="neg", dtype="bfloat16", templates={"object": "a"})
    assert base != spec.config_hash(mode="pos", dtype="float32", templates={"object": "a"})
    assert base != spec.config_hash(mode="pos", dtype="bfloat16", templates={"object": "b"})


def test_custom_spec_derives_a_key_from_the_hub_id():
    spec = custom_spec("Qwen/Qwen2-VL-2B-Instruct")
    assert (spec.key, spec.hub_id, spec.family) == ("qwen2_vl_2b_instruct", "Qwen/Qwen2-VL-2B-Instruct", "auto")
    with pytest.raises(UserError, match="must match"):
        custom_spec("Qwen/Qwen2-VL-2B-Instruct", "Bad-Key")


def test_judges_ask_the_annotation_uis_questions_and_hash_their_wording():
    import validation.questions as annotation_ui
    from judges.questions import wording_examples

    assert object_question is annotation_ui.object_question
    assert statement_question is annotation_ui.statement_question
    assert wording_examples() == {
        "whole": 'Does this image show "a photo of a red cup"? Answer yes or no.',
        "object": "Is there an apple in the image?",
        "object_plural": "Are there skis in the image?",
        "color": "Is the cup red?",
        "color_negated": "Is the cup not red?",
        "material": "Are the skis made of glass?",
        "material_negated": "Are the skis not made of glass?",
        "relation": "Is the backpack left of the fork?",
        "relation_negated": "Is the backpack not left of the fork?",
        "positive_in_negated_form": "Is the cup red?",
    }
