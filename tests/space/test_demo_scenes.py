"""The demo's synthetic scenes (`space.demo_scenes`): the shipped records are what the real rules give
for the drawings today, they show every outcome, and the reader reads only what was drawn."""

from __future__ import annotations

import io
from collections import Counter

import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.results import CAUSES
from leaderboard.store.image_sources import ImagesUnreachable
from space.demo_scenes import (
    SAMPLES,
    DrawingReader,
    SceneImages,
    draw_scene,
    read_layout,
    scene_layout,
    score_scenes,
    shipped_records,
)
from validation.examples import example_prompts


@pytest.fixture(scope="module")
def prompts():
    return example_prompts(load_prompts(None))


def test_the_shipped_records_are_what_the_scorer_gives_for_the_scenes_today(prompts):
    shipped = [record.model_dump() for record in shipped_records()]
    scored = [record.model_dump() for record in score_scenes(prompts)]
    assert len(shipped) == 48 * SAMPLES, "the examples' 48 prompts, four scenes each"
    assert shipped == scored, "the demo's records are stale: write them anew with `python -m space.demo_scenes`"


def test_every_category_passes_and_fails_and_every_cause_is_shown(prompts):
    records = shipped_records()
    category = {prompt.prompt_id: prompt.category for prompt in prompts}
    outcomes = {(category[record.prompt_id], record.passed) for record in records}
    assert outcomes == {(name, passed) for name in set(category.values()) for passed in (True, False)}
    causes = Counter(s.cause for record in records for s in record.statements if not s.satisfied)
    assert set(causes) == set(CAUSES), f"causes never shown by the demo: {set(CAUSES) - set(causes)}"
    assert not [record for record in records if record.error], "a scene the scorer could not read"


def test_the_reader_reads_back_what_was_drawn_and_nothing_from_a_plain_picture(prompts):
    prompt = prompts[0]
    layout = scene_layout(prompt, 0)
    scene = Image.open(io.BytesIO(draw_scene(prompt, layout)))
    assert read_layout(scene) == layout
    [seen] = DrawingReader().observe([scene], [prompt])
    drawn = {obj.name for obj in layout}
    assert {name for name, obj in seen.objects.items() if obj.present} == drawn
    plain = Image.new("RGB", scene.size, (128, 128, 128))  # not a demo scene: no layout written into it
    assert read_layout(plain) is None
    [empty] = DrawingReader().observe([plain], [prompt])
    assert not any(obj.present for obj in empty.objects.values())


def test_the_scene_source_draws_samples_0_to_3_and_refuses_any_other(prompts):
    source = SceneImages(PromptIndex(prompts))
    prompt_id = prompts[0].prompt_id
    [(key, image)] = list(source.images([(prompt_id, SAMPLES - 1)]))
    assert key == (prompt_id, SAMPLES - 1) and image.size == (384, 256)
    for bad in [(prompt_id, SAMPLES), (prompt_id, -1), ("no_such_prompt", 0)]:
        with pytest.raises(ImagesUnreachable, match="the demo drew no scene"):
            list(source.images([bad]))
