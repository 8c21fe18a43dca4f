"""The annotation record, its human verdicts, question wording, and labels per image."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dataset_builder.grammar import parse_prompt
from judges.questions import object_question, statement_question
from tests.helpers.validation_helpers import annotation, corpus, write_jsonl
from validation.annotations import (
    AnnotationError,
    AnnotationRecord,
    annotator_passes,
    annotator_score,
    check_against_prompt,
    read_annotations,
    statement_verdicts,
    write_annotations,
)
from validation.labels import build_labels
from validation.questions import prompt_questions

FIGURE_7 = parse_prompt(
    "a photo of a backpack, a fork, and a cup, where the backpack is left of the cup and is not left of the fork"
)


def record(prompt, objects, statements, annotator="ann") -> AnnotationRecord:
    return AnnotationRecord(
        prompt_id=prompt.prompt_id,
        model_key="m",
        sample_index=0,
        annotator=annotator,
        objects=objects,
        statements=statements,
    )


# ------------------------------------------------------------------------------------------ questions


@pytest.mark.parametrize(
    ("name", "question"),
    [
        ("cup", "Is there a cup in the image?"),
        ("orange", "Is there an orange in the image?"),
        ("umbrella", "Is there an umbrella in the image?"),
        ("skis", "Are there skis in the image?"),
        ("scissors", "Are there scissors in the image?"),
        ("hot dog", "Is there a hot dog in the image?"),
    ],
)
def test_object_questions(name, question):
    assert object_question(name) == question


def test_statements_are_asked_affirmatively_and_negated_form_only_rephrases_negated_ones():
    questions = prompt_questions(FIGURE_7)
    assert [q.text for q in questions] == [
        "Is there a backpack in the image?",
        "Is there a fork in the image?",
        "Is there a cup in the image?",
        "Is the backpack left of the cup?",
        "Is the backpack left of the fork?",  # the prompt negates it; the question does not
    ]
    assert [q.element for q in questions][-2:] == ["statement:0", "statement:1"]
    assert [q.polarity for q in questions][-2:] == ["positive", "negated"]
    negated_form = [q.text for q in prompt_questions(FIGURE_7, negated_form=True)]
    assert negated_form[-2:] == ["Is the backpack left of the cup?", "Is the backpack not left of the fork?"]


def test_attribute_and_plural_statement_questions():
    color = parse_prompt("a photo of a non-red cup").statements[0]
    material = parse_prompt("a photo of a wooden bench and a non-glass vase").statements
    plural = parse_prompt("a photo of skis and a bench, where the skis are not bigger than the bench").statements[0]
    assert statement_question(color) == "Is the cup red?"
    assert statement_question(color, negated_form=True) == "Is the cup not red?"
    assert statement_question(material[0]) == "Is the bench made of wood?"
    assert statement_question(material[1], negated_form=True) == "Is the vase not made of glass?"
    assert statement_question(plural) == "Are the skis bigger than the bench?"
    non_red_scissors = parse_prompt("a photo of non-red scissors").statements[0]
    assert statement_question(non_red_scissors) == "Are the scissors red?"


# ------------------------------------------------------------------------------------------- verdicts


def test_human_verdicts_follow_polarity_and_unseen_objects():
    # "backpack left of cup" (positive) answered yes → satisfied;
    # "backpack not left of fork" (negated) answered yes → not satisfied.
    seen_all = {"backpack": True, "fork": True, "cup": True}
    answers = record(FIGURE_7, seen_all, {"0": True, "1": True})
    assert statement_verdicts(answers, FIGURE_7) == {0: True, 1: False}
    assert not annotator_passes(answers, FIGURE_7)
    assert annotator_score(answers, FIGURE_7) == 4 / 5
    correct = record(FIGURE_7, seen_all, {"0": True, "1": False})
    assert annotator_passes(correct, FIGURE_7) and annotator_score(correct, FIGURE_7) == 1.0
    # The fork not seen: the negated statement about it is unsatisfied even though "no" was answered.
    no_fork = record(FIGURE_7, {"backpack": True, "fork": False, "cup": True}, {"0": True, "1": False})
    assert statement_verdicts(no_fork, FIGURE_7) == {0: True, 1: False}
    assert annotator_score(no_fork, FIGURE_7) == 3 / 5


def test_record_validation():
    with pytest.raises(ValidationError, match="statement indices"):
        record(FIGURE_7, {"cup": True}, {"first": True})
    with pytest.raises(ValidationError, match="blank"):
        record(FIGURE_7, {"cup": True}, {"0": True}, annotator="   ")
    with pytest.raises(ValidationError):
        AnnotationRecord(prompt_id="../x", model_key="m", sample_index=0, annotator="a", objects={}, statements={})
    assert record(FIGURE_7, {}, {}, annotator="  ann ").annotator == "ann"
    # created_at: ISO with or without a zone, or epoch seconds; all comparable (UTC when no zone)
    fields = {"prompt_id": "p", "model_key": "m", "sample_index": 0, "annotator": "a", "objects": {}, "statements": {}}
    naive = AnnotationRecord.model_validate(fields | {"created_at": "2026-01-01T00:00:00"})
    epoch = AnnotationRecord.model_validate(fields | {"created_at": 1767225600})
    assert naive.created_at == epoch.created_at and naive.created_at.utcoffset().total_seconds() == 0


def test_check_against_prompt_names_the_mismatch():
    with pytest.raises(AnnotationError, match=r"objects \['cup'\] but the prompt has \['backpack', 'cup', 'fork'\]"):
        check_against_prompt(record(FIGURE_7, {"cup": True}, {"0": True, "1": True}), FIGURE_7)


def test_jsonl_round_trip_and_errors(tmp_path):
    prompt = corpus()["color_pos1_neg0_000"]
    records = [annotation(prompt, "bob", True), annotation(prompt, "ann", False, minute=3)]
    path = tmp_path / "a.jsonl"
    assert write_annotations(records, path) == 2
    back = read_annotations(path)
    assert [r.annotator for r in back] == ["ann", "bob"]  # sorted by image, then annotator
    assert back[0] == records[1]
    write_jsonl([*records, records[0]], path)
    with pytest.raises(AnnotationError, match=r"a\.jsonl:3: duplicate annotator line: 'bob' .* on line 1"):
        read_annotations(path)
    assert len(read_annotations(path, allow_duplicates=True)) == 3
    path.write_text(records[0].model_dump_json() + "\n{not json\n")
    with pytest.raises(AnnotationError, match=r"a\.jsonl:2: not JSON"):
        read_annotations(path)
    path.write_text('{"prompt_id": "x"}\n')
    with pytest.raises(AnnotationError, match=r"a\.jsonl:1: not an annotation record"):
        read_annotations(path)


# --------------------------------------------------------------------------------------------- labels


def test_labels_majority_score_and_coverage():
    prompts = corpus()
    first, second = prompts["color_pos1_neg0_000"], prompts["depth_pos1_neg1_003"]
    records = [
        annotation(first, "cat", False, minute=2),
        annotation(first, "ann", True, minute=0),
        annotation(first, "bob", True, minute=1),
        annotation(first, "dan", False, minute=9),  # a fourth: the three earliest are used
        annotation(second, "ann", True),
        annotation(second, "bob", True),
    ]
    labels = build_labels(records, prompts)
    assert list(labels.labels) == [("m", "color_pos1_neg0_000", 0)]
    label = labels.labels[("m", "color_pos1_neg0_000", 0)]
    assert label.annotators == ("ann", "bob", "cat")  # slots sorted by name
    assert label.passes == (True, True, False) and label.majority
    # "an orange dog": cat answered "no" to the statement → 1 of 2 elements; score (1 + 1 + 0.5) / 3
    assert label.scores == (1.0, 1.0, 0.5) and label.score == pytest.approx(2.5 / 3)
    assert label.element_majority == (True, True)
    assert labels.under_annotated == {("m", "depth_pos1_neg1_003", 0): 2}
    assert labels.extra_ignored == 1
    assert labels.coverage()["annotators"] == 4


def test_labels_refuse_duplicates_and_unknown_prompts():
    prompts = corpus()
    prompt = prompts["color_pos1_neg0_000"]
    with pytest.raises(AnnotationError, match="duplicate annotator lines: 'ann'"):
        build_labels([annotation(prompt, "ann", True), annotation(prompt, "ann", False)], prompts)
    stranger = annotation(prompt, "ann", True).model_copy(update={"prompt_id": "colour_pos1_neg0_000"})
    with pytest.raises(AnnotationError, match="unknown prompt id 'colour_pos1_neg0_000'"):
        build_labels([stranger], prompts)
