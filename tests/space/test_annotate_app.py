"""The Annotate endpoints and the judge panel through gradio_client against a localhost launch.

Each `Client` is one browser session (its own `gr.State`), so four clients are four annotators
working at once; the app is told 127.0.0.1 is its proxy, so each client's X-Forwarded-For makes it
another visitor. The judge is a double inside this file (fixed P("yes") per kind of question);
`test_judge_panel_with_a_tiny_real_judge` runs the real transformers judge class on a tiny
random-weight Qwen2-VL instead.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
import pytest
from gradio_client import Client, handle_file

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from judges.registry import JudgeSpec
from leaderboard.store.sqlite_store import SQLiteStore
from space.app import build_app
from tests.helpers.annotate_helpers import answer_pattern, expected_record, images_dataset, sample_of
from tests.helpers.net import launch_local, local_client
from tests.helpers.space_helpers import scene_png
from validation.questions import prompt_questions

PROMPT_IDS = ("color_pos0_neg1_000", "material_pos1_neg1_000", "comparative_pos1_neg0_000")
# What an annotate endpoint returns (the session state stays on the server): header, image,
# progress, status, then the question components.
HEADER, IMAGE, PROGRESS, STATUS = range(4)


class FixedJudge:
    """Judge double: P("yes") 0.9 for "Is there ...?" questions, 0.2 for every other."""

    spec = JudgeSpec("toy_judge", "org/toy-judge", "auto", "1B")
    device = "cpu"
    dtype_name = "float32"

    def __init__(self) -> None:
        self.loads = 0
        self.asked: list[str] = []

    def load(self) -> None:
        self.loads += 1

    def yes_probability(self, images: Sequence, questions: Sequence[str]) -> list[float]:
        assert len(images) == len(questions)
        self.asked += list(questions)
        return [0.9 if q.startswith(("Is there", "Are there")) else 0.2 for q in questions]


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def app(prompts, tmp_path_factory):
    root = tmp_path_factory.mktemp("annotate_app")
    index = PromptIndex(prompts)
    chosen = [index[p] for p in PROMPT_IDS]
    sample = sample_of(images_dataset(root / "ds", chosen), chosen, out=root / "sample.jsonl")
    store = SQLiteStore(root / "lb.sqlite")
    judge = FixedJudge()
    demo = build_app(
        prompts=prompts,
        store=store,
        annotation_sample=root / "sample.jsonl",
        judge=judge,
        judge_mode="pos",
        preload=True,
        forwarded_allow_ips="127.0.0.1",
    )
    url = launch_local(demo)
    clients: list[Client] = []

    def client() -> Client:
        address = f"198.51.100.{len(clients) + 1}"  # what the proxy appends: one visitor per client
        clients.append(local_client(url, verbose=False, headers={"X-Forwarded-For": address}))
        return clients[-1]

    yield {"client": client, "store": store, "sample": sample, "index": index, "judge": judge, "root": root}
    for c in clients:
        c.close()
    demo.close()


@pytest.mark.slow  # four sessions through the server
def test_three_distinct_annotators_per_image_through_the_api(app):
    sample, index, store = app["sample"], app["index"], app["store"]
    sessions = {name: app["client"]() for name in ("ann", "bob", "cat", "dan")}
    pages = {name: c.predict(name, api_name="/annotate_start") for name, c in sessions.items()}
    first, second = (index[sample[k].prompt_id].prompt for k in (0, 1))
    assert [pages[n][HEADER] for n in ("ann", "bob", "cat")] == [f"### Image 1\n\n**Prompt:** {first}"] * 3
    assert pages["dan"][HEADER] == f"### Image 1\n\n**Prompt:** {second}"  # image 1 is open for three already
    prompt = index[sample[0].prompt_id]
    for k, name in enumerate(("ann", "bob", "cat")):
        answers = answer_pattern(prompt, k)
        page = sessions[name].predict(*answers, None, None, None, api_name="/annotate_save")
        assert page[STATUS] == "Saved." and page[HEADER].startswith("### Image 2\n")
    assert store.annotators_of(sample[0].image_key) == ["ann", "bob", "cat"]
    # ann and bob went on to the second image, where dan is: it is full, so cat gets the third
    assert page[HEADER] == f"### Image 2\n\n**Prompt:** {index[sample[2].prompt_id].prompt}"
    assert page[PROGRESS] == "**cat** · 1 done · 1 left for you · 1 of 3 images complete (3 annotators)"
    eve = app["client"]().predict("eve", api_name="/annotate_start")
    # the first image is complete and the second open for ann, bob and dan: eve starts on the third
    assert eve[HEADER] == f"### Image 1\n\n**Prompt:** {index[sample[2].prompt_id].prompt}"


@pytest.mark.slow
def test_back_and_change_through_the_api(app):
    sample, index, store = app["sample"], app["index"], app["store"]
    session = app["client"]()
    header = session.predict("fred", api_name="/annotate_start")[HEADER]
    by_text = {f"### Image 1\n\n**Prompt:** {index[i.prompt_id].prompt}": index[i.prompt_id] for i in sample}
    prompt = by_text[header]  # whichever image is open now (the other tests share the server)
    first = answer_pattern(prompt, 0)
    blanks = [None] * (5 - len(first))
    session.predict(*first, *blanks, api_name="/annotate_save")
    back = session.predict(api_name="/annotate_back")
    assert back[HEADER] == header
    shown = [(u["label"], u["value"]) for u in back[4:] if u["visible"]]
    labels = [f"{i + 1}. {q.text}" for i, q in enumerate(prompt_questions(prompt))]
    assert shown == list(zip(labels, first, strict=True))  # fred's own answers, filled in
    changed = ["no" if a == "yes" else "yes" for a in first]
    session.predict(*changed, *blanks, api_name="/annotate_save")
    (record,) = store.annotations("fred")
    assert (record.objects, record.statements) == expected_record(prompt, changed)


def test_judge_answers_beside_the_scorer(app):
    judge = app["judge"]
    assert judge.loads == 1  # preloaded once, in the main process
    summary, table = app["client"]().predict(
        handle_file(str(scene_png(app["root"] / "scene.png"))), "color_pos0_neg1_000", "", api_name="/judge"
    )
    frame = pd.DataFrame(table["data"], columns=table["headers"])
    assert frame.to_dict("records") == [
        {
            "element": "object laptop",
            "question": "Is there a laptop in the image?",
            "p(yes)": 0.9,
            "p(satisfied)": 0.9,
            "satisfied": "yes",
        },
        # pos mode: the negated statement asked affirmatively, "no" satisfies it
        {
            "element": "statement 0",
            "question": "Is the laptop orange?",
            "p(yes)": 0.2,
            "p(satisfied)": 0.8,
            "satisfied": "yes",
        },
    ]
    assert summary.startswith("### Judge toy_judge/pos: <span class='verdict-pass'>PASS</span>\n\nscore 0.850")
    assert judge.asked[-2:] == ["Is there a laptop in the image?", "Is the laptop orange?"]


@pytest.mark.slow
def test_judge_panel_stays_empty_without_an_upload(app):
    summary, table = app["client"]().predict(None, "color_pos0_neg1_000", "", api_name="/judge")
    assert summary == "" and table["data"] == []


@pytest.mark.slow
def test_ninety_made_up_annotators_leave_a_real_one_an_image(prompts, tmp_path):
    """A flood of made-up annotators: one client starts 90 sessions under made-up names (and forges the
    first X-Forwarded-For hops); at most three new names an hour get through, so a real
    annotator coming from elsewhere is still given an image of the 30-image sample."""
    chosen = prompts[::160][:30]
    sample_of(images_dataset(tmp_path / "ds", chosen), chosen, out=tmp_path / "sample.jsonl")
    store = SQLiteStore(tmp_path / "lb.sqlite")
    demo = build_app(
        prompts=prompts, store=store, annotation_sample=tmp_path / "sample.jsonl", forwarded_allow_ips="127.0.0.1"
    )
    url = launch_local(demo)
    flooder = local_client(url, verbose=False, headers={"X-Forwarded-For": "203.0.113.66"})
    try:
        refused = 0
        for k in range(90):
            forged = (
                local_client(url, verbose=False, headers={"X-Forwarded-For": f"10.1.{k}.1, 203.0.113.66"})
                if k % 10 == 0
                else flooder
            )
            page = forged.predict(f"fake{k}", api_name="/annotate_start")
            refused += page[STATUS].startswith("⚠️ this client brought 3 new names within the hour")
            if forged is not flooder:
                forged.close()
        assert refused == 87
        real = local_client(url, verbose=False, headers={"X-Forwarded-For": "198.51.100.200"})
        page = real.predict("Real Annotator", api_name="/annotate_start")
        real.close()
        assert page[HEADER].startswith("### Image 1\n\n**Prompt:**"), page[HEADER]
        # the three names that got through hold the first image (its three slots): 29 are left for the real one
        assert page[PROGRESS].startswith("**real annotator** · 0 done · 29 left for you")
    finally:
        flooder.close()
        demo.close()
