"""The Annotate tab's handlers, called directly (no server): what is shown, assignment to three
distinct annotators with reservations, resume after a restart, going back to change an answer,
progress, and the images read from the sample's dataset/shard/row."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from leaderboard.store.sqlite_store import SQLiteStore
from negt2ibench.core.errors import UserError
from space.tabs.annotate.annotate_handlers import AnnotateHandlers, NameLimiter, Reservations
from space.tabs.annotate.annotate_tab import annotation_handlers
from space.tabs.annotate.annotation_images import SampleImages
from tests.helpers.annotate_helpers import SPLIT, answer_pattern, color_of, expected_record, images_dataset, sample_of
from validation.sample import SampleItem, write_sample

PROMPT_IDS = (
    "color_pos0_neg1_000",
    "directional_pos1_neg1_000",
    "material_pos1_neg1_000",
    "comparative_pos1_neg0_000",
)
# The page tuple: session, header, image, progress, status, then one update per question component.
SESSION, HEADER, IMAGE, PROGRESS, STATUS = range(5)


@pytest.fixture(scope="module")
def index():
    return PromptIndex(load_prompts(None))


@pytest.fixture
def study(tmp_path, index):
    prompts = [index[p] for p in PROMPT_IDS]
    sample = sample_of(images_dataset(tmp_path / "ds", prompts), prompts)
    clock = SimpleNamespace(now=0.0)
    store = SQLiteStore(tmp_path / "lb.sqlite")

    def handlers(**extra) -> AnnotateHandlers:
        reservations = Reservations(seconds=1800, clock=lambda: clock.now)
        # these calls come from one client (no request): room for all their names (the limit has its own test)
        extra.setdefault("names", NameLimiter(per_hour=100, clock=lambda: clock.now))
        return AnnotateHandlers(
            sample=sample, prompts=index, store=store, images=SampleImages(), reservations=reservations, **extra
        )

    return SimpleNamespace(prompts=prompts, sample=sample, store=store, handlers=handlers, clock=clock)


def questions(page) -> list[tuple[str, object]]:
    """(label, value) of the visible question components."""
    return [(u["label"], u["value"]) for u in page[5:] if u["visible"]]


def answer(on: AnnotateHandlers, page, k: int):
    prompt = on.prompts[on.sample[page[SESSION]["position"]].prompt_id]
    answers = answer_pattern(prompt, k)
    return on.save(page[SESSION], *answers, *[None] * (on.slot_count - len(answers))), answers


def test_first_page_shows_image_prompt_and_affirmative_questions_only(study):
    on = study.handlers()
    page = on.start("alice", {})
    assert page[SESSION] == {"annotator": "alice", "position": 0, "skipped": [], "shown": True}
    assert page[HEADER] == "### Image 1\n\n**Prompt:** a photo of a non-orange laptop"
    assert page[IMAGE].getpixel((5, 5)) == color_of(0)
    # the negated statement ("non-orange") is asked affirmatively; nothing else is shown
    assert questions(page) == [("1. Is there a laptop in the image?", None), ("2. Is the laptop orange?", None)]
    assert on.slot_count == 5 and [u["visible"] for u in page[5:]] == [True, True, False, False, False]
    assert page[PROGRESS] == "**alice** · 0 done · 4 left for you · 0 of 4 images complete (3 annotators)"
    shown = " ".join([page[HEADER], page[PROGRESS], page[STATUS], *(label for label, _ in questions(page))])
    assert SPLIT not in shown and "toy" not in shown  # never the generator


def test_each_image_goes_to_three_distinct_annotators_reservations_included(study):
    on = study.handlers()
    first = {name: on.start(name, {}) for name in ("ann", "bob", "cat")}
    assert {name: page[SESSION]["position"] for name, page in first.items()} == {"ann": 0, "bob": 0, "cat": 0}
    # image 0 is open for three people, none has saved: a fourth is given image 1
    assert on.start("dan", {})[SESSION]["position"] == 1
    saved, _ = answer(on, first["ann"], 0)
    assert saved[STATUS] == "Saved." and saved[SESSION]["position"] == 1  # never image 0 again
    assert study.store.annotators_of(study.sample[0].image_key) == ["ann"]
    # the reservations of bob and cat expire after 30 minutes: image 0 is open again
    study.clock.now = 1801.0
    assert on.start("eve", {})[SESSION]["position"] == 0
    for page, k in ((first["bob"], 1), (first["cat"], 2)):
        answer(on, page, k)
    assert sorted(study.store.annotators_of(study.sample[0].image_key)) == ["ann", "bob", "cat"]
    assert on.start("fay", {})[SESSION]["position"] == 1  # image 0 is complete


def test_a_reservation_never_gives_away_the_last_slot(study):
    on = study.handlers()
    for k, name in enumerate(("ann", "bob")):
        answer(on, on.start(name, {}), k)
    assert on.start("cat", {})[SESSION]["position"] == 0  # the last slot, now reserved for cat
    assert on.start("dan", {})[SESSION]["position"] == 1
    assert on.start("cat", {})[SESSION]["position"] == 0  # cat signing in again keeps it


def test_resume_after_a_restart_and_progress(study):
    on = study.handlers()
    page = on.start("alice", {})
    for k in range(2):
        page, _ = answer(on, page, k)
    assert page[HEADER].startswith("### Image 3\n")
    restarted = study.handlers()  # a new app on the same store: nothing held in memory survives
    page = restarted.start("alice", {})
    assert page[SESSION]["position"] == 2
    assert page[HEADER] == "### Image 3\n\n**Prompt:** a photo of a metal car and a non-metal computer mouse"
    assert page[PROGRESS] == "**alice** · 2 done · 2 left for you · 0 of 4 images complete (3 annotators)"
    assert [r.prompt_id for r in study.store.annotations("alice")] == sorted(PROMPT_IDS[:2])


def test_go_back_and_change_an_answer(study, index):
    on = study.handlers()
    page = on.start("alice", {})
    page, first = answer(on, page, 0)
    page, second = answer(on, page, 1)
    assert page[SESSION]["position"] == 2
    back = on.back(page[SESSION])
    assert back[SESSION]["position"] == 1 and back[HEADER].startswith("### Image 2\n")
    assert [value for _, value in questions(back)] == second  # their own answers, to change
    assert back[PROGRESS].endswith("*reviewing an earlier answer: change it and press Save*")
    back = on.back(back[SESSION])
    assert back[SESSION]["position"] == 0
    assert on.back(back[SESSION])[STATUS] == "This is your first image."
    changed = ["no" if a == "yes" else "yes" for a in first]
    after = on.save(back[SESSION], *changed, None, None, None)
    assert after[SESSION]["position"] == 1  # on to the next answered image
    records = study.store.annotations("alice")
    assert len(records) == 2  # replaced, not added
    record = next(r for r in records if r.prompt_id == PROMPT_IDS[0])
    assert (record.objects, record.statements) == expected_record(index[PROMPT_IDS[0]], changed)
    forward = on.forward(after[SESSION])
    assert forward[SESSION]["position"] == 2 and forward[HEADER].startswith("### Image 3\n")
    assert questions(forward)[0][1] is None  # a new image: nothing filled in
    assert on.forward(forward[SESSION])[STATUS] == "Answer every question and press Save to go on."


def test_unanswered_questions_are_named_and_nothing_is_stored(study):
    on = study.handlers()
    page = on.start("alice", {})
    refused = on.save(page[SESSION], "yes", None, None, None, None)
    assert refused[STATUS] == "⚠️ answer question(s) 2 first (yes or no)"
    assert refused[SESSION] == page[SESSION] and study.store.annotations() == []


def test_finished_annotator_sees_the_end_and_can_review(study):
    on = study.handlers()
    page = on.start("alice", {})
    for k in range(4):
        page, _ = answer(on, page, k)
    assert page[SESSION]["position"] is None and page[IMAGE] is None
    assert page[HEADER].startswith("### Nothing left for you\n\nYou annotated 4 image(s)")
    assert page[PROGRESS] == "**alice** · 4 done · 0 left for you · 0 of 4 images complete (3 annotators)"
    assert on.save(page[SESSION], "yes")[STATUS] == "Nothing left to annotate."
    assert on.back(page[SESSION])[SESSION]["position"] == 3


def test_sign_in_rules(study):
    on = study.handlers()
    assert on.start("  ", {})[STATUS] == "⚠️ type your name to start"
    assert on.save({}, "yes")[STATUS] == "⚠️ press Start first"
    space = study.handlers(require_login=True)
    assert space.start("alice", {})[STATUS] == "⚠️ sign in with Hugging Face (button above) to annotate"
    import gradio as gr

    # what gradio hands the handler when the visitor signed in with Hugging Face
    profile = gr.OAuthProfile({"preferred_username": "alice", "name": "Alice", "picture": "", "profile": ""})
    page = space.start("", {}, None, profile)
    assert page[SESSION]["annotator"] == "hf:alice"
    assert on.start("hf:bob", {})[STATUS].startswith("⚠️ names starting with hf: belong to Hugging Face accounts")


def test_names_are_normalised_and_lookalikes_are_one_annotator(study):
    on = study.handlers()
    page, _ = answer(on, on.start("Alice", {}), 0)
    assert page[SESSION]["annotator"] == "alice"
    # a zero-width space and a joiner, a Cyrillic а, fullwidth letters
    for typed in ("alice", "ALICE", "alice\u200b", " a\u200dlice ", "\u0430lice", "ａｌｉｃｅ"):
        assert on.start(typed, {})[SESSION]["annotator"] == "alice", typed
    assert study.store.annotations("alice") and len({r.annotator for r in study.store.annotations()}) == 1


def test_each_client_brings_few_new_names_an_hour(study):
    clock = study.clock
    on = study.handlers(names=NameLimiter(per_hour=2, clock=lambda: clock.now))
    client = SimpleNamespace(username=None, client=SimpleNamespace(host="198.51.100.9"))
    other = SimpleNamespace(username=None, client=SimpleNamespace(host="198.51.100.10"))
    assert on.start("one", {}, client)[SESSION]["annotator"] == "one"
    assert on.start("two", {}, client)[SESSION]["annotator"] == "two"
    refused = on.start("three", {}, client)
    assert refused[STATUS].startswith("⚠️ this client brought 2 new names within the hour") and not refused[SESSION]
    assert on.start("one", {}, client)[SESSION]["annotator"] == "one"  # a name it brought: still fine
    assert on.start("three", {}, other)[SESSION]["annotator"] == "three"  # another client
    clock.now = 3601.0
    assert on.start("four", {}, client)[SESSION]["annotator"] == "four"  # an hour later


def test_unreadable_image_is_reported_and_can_be_skipped(study, caplog):
    broken = [study.sample[0].model_copy(update={"shard": "images/gone.parquet", "sample_index": 3})]
    on = AnnotateHandlers(
        sample=broken + study.sample[1:], prompts=study.handlers().prompts, store=study.store, images=SampleImages()
    )
    page = on.start("alice", {})
    assert page[IMAGE] is None and questions(page) == []
    assert page[STATUS] == (
        "⚠️ this image cannot be shown (the reason is in the server log). "
        "Press → to skip it for now, and tell the study's organiser."
    )
    assert "no image color_pos0_neg1_000 sample 3 in split toy_model of" in caplog.text  # the reason, for the organiser
    assert on.save(page[SESSION], "yes", "no")[STATUS] == "⚠️ this image could not be shown: press → to skip it"
    skipped = on.forward(page[SESSION])
    assert skipped[SESSION]["position"] == 1 and skipped[SESSION]["skipped"] == [0]
    assert on.save(skipped[SESSION], "yes", "yes", "yes", "yes", "no")[SESSION]["position"] == 2  # still skipped


def test_sample_checks(study, index, tmp_path):
    with pytest.raises(UserError, match="line 2: image .* is listed twice"):
        AnnotateHandlers(sample=study.sample[:1] * 2, prompts=index, store=study.store, images=SampleImages())
    unknown = SampleItem(prompt_id="nope_000", model_key=SPLIT, sample_index=0, category="color", setting="pos1_neg0")
    with pytest.raises(UserError, match="line 1: unknown prompt id 'nope_000'"):
        AnnotateHandlers(sample=[unknown], prompts=index, store=study.store, images=SampleImages())
    assert annotation_handlers(store=study.store, prompts=index) is None  # no sample: the tab explains


def test_images_by_shard_row_by_key_and_beside_the_sample_file(study, tmp_path):
    images = SampleImages()
    for k, item in enumerate(study.sample):  # rows 0..3 over two row groups
        assert images.load(item).getpixel((0, 0)) == color_of(k)
    moved = study.sample[3].model_copy(update={"row": 0})  # the row holds another image: found by key
    assert images.load(moved).getpixel((0, 0)) == color_of(3)
    relative = [i.model_copy(update={"dataset": "ds"}) for i in study.sample]
    sample_file = tmp_path / "sample.jsonl"
    write_sample(relative, sample_file)
    on = annotation_handlers(store=study.store, prompts=study.handlers().prompts, sample=sample_file)
    assert on.images.load(on.sample[2]).getpixel((0, 0)) == color_of(2)  # "ds" next to sample.jsonl
    override = SampleImages(images=str(tmp_path / "ds"))
    assert override.load(study.sample[1].model_copy(update={"dataset": "elsewhere"})).getpixel((0, 0)) == color_of(1)
