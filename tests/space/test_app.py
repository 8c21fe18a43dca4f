"""The Space's endpoints through gradio_client against a localhost launch (perception: a test double)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from gradio_client import handle_file

from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from leaderboard.intake.submissions import ImagesUnreachable, ParquetImages, SubmissionLimits
from leaderboard.store.ranking import PAPER_ROWS, REPORTED, newest_entries
from leaderboard.store.sqlite_store import Entry, SQLiteStore
from space.app import build_app
from space.tabs.leaderboard.leaderboard_views import leaderboard_frame
from space.tabs.score.score_views import grammar_markdown
from tests.helpers.gradio_values import shown
from tests.helpers.jobs_helpers import double_jobs
from tests.helpers.net import launch_local, local_client, served_launch_settings, space_launch_settings
from tests.helpers.space_helpers import (
    RectanglePerception,
    pinned_commit,
    scene_png,
    wait_for,
    write_images_dataset,
    write_results,
)

SPLIT = "toy_model"
IMAGES_REPO = "org/toy-images"


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture(scope="module")
def data(prompts, tmp_path_factory):
    root = tmp_path_factory.mktemp("space_data")
    return {
        "good": write_results(root / "good.jsonl", prompts, SPLIT, passed=False),
        "old_version": write_results(root / "old.jsonl", prompts[:10], SPLIT, passed=False, version="0.1.0"),
        "hub": root / "hub",  # ORG/NAME folders laid out as the Hub repos, for the verification jobs
        "images": write_images_dataset(root / "hub" / IMAGES_REPO, prompts, SPLIT),
        "scene": scene_png(root / "scene.png"),
        "not_image": (root / "notes.png").write_bytes(b"this is not an image") and root / "notes.png",
        "tiny": scene_png(root / "tiny.png", size=(8, 8)),
        "huge": scene_png(root / "huge.png", size=(8000, 6000)),  # 48 MP: over the scorer's limit
    }


class PerTest:
    """The store or perception of the module's app, replaced by a fresh one for each test (so no
    test sees another's submissions, daily count or double, whatever the order)."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def observe(self, images, prompts):
        # `Perception` is a runtime-checkable Protocol: from Python 3.12 its isinstance check looks the
        # method up on the class (inspect.getattr_static), where `__getattr__` does not reach.
        return self.inner.observe(images, prompts)


@pytest.fixture(scope="module")
def server(prompts, data, tmp_path_factory):
    """One launched app per module (launching costs seconds); its state is reset per test by `app`."""

    def open_images(repo_id, revision, split):
        if repo_id != IMAGES_REPO:
            raise ImagesUnreachable(f"images not reachable: {repo_id} (offline test)")
        return ParquetImages.from_folder(data["images"], split)

    store = PerTest(SQLiteStore(tmp_path_factory.mktemp("space_store") / "lb.sqlite"))
    perception = PerTest(RectanglePerception())
    # the spot check runs as a job subprocess: the real command, the rectangle double as its scorer,
    # a fixed sample secret (each test has one outcome)
    jobs = double_jobs(store.locator(), tmp_path_factory.mktemp("jobs"), images_from=data["hub"], secret=b"test secret")
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=perception,
        open_images=open_images,
        limits=SubmissionLimits(per_day=3),  # the spot check of the stated guarantee: 652 images
        verify_backend=jobs,
        recheck_every=0.5,
    )
    client = local_client(launch_local(demo), verbose=False)
    yield {"client": client, "store": store, "perception": perception, "demo": demo, "jobs": jobs}
    client.close()
    demo.close()


@pytest.fixture
def app(server, tmp_path):
    """The module's app with an empty store and a fresh perception double for this test."""
    server["store"].inner = SQLiteStore(tmp_path / "lb.sqlite")
    server["jobs"].locator = server["store"].inner.locator()  # this test's store, for its jobs
    server["perception"].inner = RectanglePerception()
    return {
        "client": server["client"],
        "store": server["store"].inner,
        "perception": server["perception"].inner,
        "demo": server["demo"],
    }


def test_the_tests_launch_the_app_as_serve_does(server):
    """launch_local (every browser test, `make screenshots`) launches with `space.app.LAUNCH_KWARGS`,
    as `negt2ibench serve` does (tests/space/test_cli.py): the indigo Soft theme, the css, the upload limit."""
    served = served_launch_settings(server["client"].src)
    assert served == space_launch_settings() and served["theme"] == "soft"


def settled(store, model_name: str, timeout: float = 240.0) -> Entry:
    """The stored entry of a model once its verification job's spot check is done (waiting on the store)."""
    wait_for(
        lambda: any(e.model_name == model_name and e.status in ("verified", "rejected") for e in store.list_entries()),
        f"the spot check of {model_name}",
        timeout=timeout,
    )
    return next(e for e in store.list_entries() if e.model_name == model_name)


def table(value) -> pd.DataFrame:
    value = shown(value)  # a table shown only with rows answers with an update
    return pd.DataFrame(value["data"], columns=value["headers"])


# ------------------------------------------------------------------------ score


@pytest.mark.slow
def test_score_a_benchmark_prompt(app, data):
    # directional_pos1_neg0_000 is "a photo of a cat and skis, where the cat is below the skis"; the
    # double lays the objects side by side (the cat left of the skis), so the statement fails.
    image, verdict, rows, result_json = app["client"].predict(
        handle_file(str(data["scene"])), "directional_pos1_neg0_000", "", api_name="/score"
    )
    frame = table(rows)
    assert "Image verdict: <span class='verdict-fail'>FAIL</span>" in verdict
    assert "2/2 objects present, 0/1 statements satisfied" in verdict
    assert list(frame["item"]) == ["object", "object", "statement 0"]
    assert list(frame["verdict"]) == ["present", "present", "fail"] and frame["observed"][2] == "left of"
    assert app["perception"].calls == 1  # this test's own double
    record = json.loads(Path(result_json).read_text())
    assert record["prompt_id"] == "directional_pos1_neg0_000" and record["model_key"] == "upload"
    assert Path(image).suffix == ".png"


@pytest.mark.slow
def test_score_a_typed_prompt_pass_and_fail(app, data):
    client = app["client"]
    _, verdict, rows, _ = client.predict(
        handle_file(str(data["scene"])),
        None,
        "a photo of a cat and a dog, where the cat is left of the dog",
        api_name="/score",
    )
    assert "Image verdict: <span class='verdict-pass'>PASS</span>" in verdict
    assert "2/2 objects present, 1/1 statements satisfied" in verdict
    assert table(rows)["verdict"].iloc[-1] == "pass"
    _, verdict, rows, _ = client.predict(
        handle_file(str(data["scene"])),
        None,
        "a photo of a cat and a dog, where the cat is not left of the dog",
        api_name="/score",
    )
    frame = table(rows)
    assert "Image verdict: <span class='verdict-fail'>FAIL</span>" in verdict
    assert (frame["verdict"].iloc[-1], frame["cause"].iloc[-1]) == ("fail", "forbidden_rendered")


@pytest.mark.parametrize(
    "upload, prompt_id, custom, message",
    [
        ("not_image", "color_pos1_neg0_000", "", "not a recognised image format"),
        ("tiny", "color_pos1_neg0_000", "", "image too small"),
        ("huge", "color_pos1_neg0_000", "", "image too large"),
        ("scene", "color_pos9_neg9_000", "", "unknown prompt id"),
        ("scene", None, "a picture of a cat", "cannot parse the prompt"),
        ("scene", None, None, "pick a benchmark prompt"),
        (None, "color_pos1_neg0_000", "", "upload an image"),
    ],
)
def test_bad_score_input_gets_a_clear_message(app, data, upload, prompt_id, custom, message):
    file = handle_file(str(data[upload])) if upload else None
    image, verdict, rows, result_json = app["client"].predict(file, prompt_id, custom, api_name="/score")
    assert verdict.startswith("**Error:**") and message in verdict
    assert "Traceback" not in verdict and image is None and result_json is None


def test_unparseable_prompt_shows_the_grammar_as_a_list(app, data):
    _, verdict, _, _ = app["client"].predict(
        handle_file(str(data["scene"])), None, "a photo of a cat that is not a dog, sort of", api_name="/score"
    )
    first, grammar = verdict.split("\n\n", 1)
    assert first.startswith("**Error:** cannot parse the prompt\\: cannot read \\'a cat that is not a dog\\'")
    assert grammar == grammar_markdown()  # a Markdown list, not an indented block


@pytest.mark.torch  # the stand-in replaces the models, not the scoring pipeline, which imports torch
def test_a_stand_ins_verdict_is_marked_as_such(app, data):
    _, verdict, _, _ = app["client"].predict(
        handle_file(str(data["scene"])), "color_pos1_neg0_000", "", api_name="/score"
    )
    assert "## Image verdict" in verdict and "**Not the evaluator's models:** verdicts here come from" in verdict
    assert "a test double this app was built with in its models' place" in verdict


# ------------------------------------------------------------------------ explore


def test_explore_filters_and_prompt_detail(app):
    client = app["client"]
    count, rows, chosen = client.predict("proximity", "pos1_neg1", "2", "any", api_name="/explore")
    frame = table(rows)
    assert count.startswith("100 prompts") and len(frame) == 100 and set(frame["setting"]) == {"1:1"}
    detail, statements, group = client.predict("proximity_pos1_neg1_007", api_name="/prompt")
    assert "proximity_pos1_neg1_007" in detail and "proximity_load2_007" in detail
    assert list(table(statements)["polarity"]) == ["positive", "negated"]
    assert sorted(table(group)["setting"]) == ["0:2", "1:1", "2:0"]
    detail, _, _ = client.predict("nope_000", api_name="/prompt")
    assert detail.startswith("**Error:**") and "unknown prompt id" in detail


# ------------------------------------------------------------------------ submit + leaderboard


@pytest.mark.slow
def test_submissions_and_leaderboard(app, data, prompts):
    client, store = app["client"], app["store"]
    status, _ = client.predict(
        handle_file(str(data["good"])), "Toy Model", "https://example.org", IMAGES_REPO, "main", api_name="/submit"
    )
    assert (
        "status **validated**: stored and its file checked; the spot check runs next, as a verification job" in status
    )
    assert status.count("validated") == 1  # the status said once, not again in its reason
    toy = settled(store, "Toy Model")  # the job re-scores 652 of the 19,200 images
    assert (
        toy.status == "verified"
        and toy.reason == "spot check: 652 of 652 re-scored images agree (0 disagree; at most 5 may)"
    )

    status, _ = client.predict(
        handle_file(str(data["old_version"])), "Old Model", "", IMAGES_REPO, "main", api_name="/submit"
    )
    assert status.startswith("**Error:** not submitted\\: invalid results file\\: evaluator version 0\\.1\\.0")
    assert status.endswith("nothing was stored\\, and this attempt does not count toward the daily limit")

    client.predict(handle_file(str(data["good"])), "Offline Model", "", "org/elsewhere", "main", api_name="/submit")
    wait_for(
        lambda: any(
            "images not reachable" in e.reason for e in store.list_entries() if e.model_name == "Offline Model"
        ),
        "the offline model's spot check to wait",
    )
    [offline] = [e for e in store.list_entries() if e.model_name == "Offline Model"]
    assert offline.status == "pending" and "images not reachable: no images/toy_model-*.parquet in" in offline.reason
    assert f"{data['hub'] / 'org' / 'elsewhere'}" in offline.reason
    submissions = client.predict(api_name="/submissions")
    assert list(table(submissions)["status"]) == ["pending", "verified"]

    client.predict(handle_file(str(data["good"])), "Third", "", IMAGES_REPO, "main", api_name="/submit")
    assert settled(store, "Third").status == "verified"
    # Per-day limit (3 in this app, the refused file not counted): refused, nothing stored.
    status, submissions = client.predict(
        handle_file(str(data["good"])), "Fourth", "", IMAGES_REPO, "main", api_name="/submit"
    )
    assert status.startswith("**Error:** not submitted\\:") and "limit 3" in status
    assert len(table(submissions)) == 3 and len(store.list_entries()) == 3

    board, csv_path, model_choice, awaiting = client.predict(api_name="/leaderboard")
    frame = table(board)
    # Only verified submissions and the paper's rows are ranked; the pending one is listed apart.
    assert set(frame["model"]) == {"Toy Model", "Third", "SD 1.5", "SD 1.5 + NegationCLIP"}
    statuses = dict(zip(frame["model"], frame["status"], strict=False))
    assert statuses["SD 1.5"] == REPORTED
    # its images (flat PNGs, no generation record) name no model to regenerate: marked
    assert statuses["Toy Model"] == "verified (sampled, n=652, 0 disagreements) · images not reproduced"
    assert dict(zip(frame["model"], frame["polarity_gap"], strict=False))["SD 1.5"] == pytest.approx(8.0)
    # The verified rows first, ranked (equal overall: equal rank), then the paper's, unranked, best first.
    assert list(frame["rank"][:2]) == [1, 1] and frame["rank"][2:].isna().all()
    assert list(frame["overall"]) == [0.0, 0.0, 14.9, 14.5]
    assert list(frame["overall_ci"][:2]) == ["[0.0, 0.0]"] * 2  # every image fails: no resample passes one
    assert pd.read_csv(csv_path)["model"].tolist() == frame["model"].tolist()
    waiting = table(awaiting)
    assert waiting[["model", "status"]].values.tolist() == [["Offline Model", "pending"]]
    assert waiting["attempts"][0] >= 1  # each stored submission wakes the rechecks: it may be tried again

    status_md, plot, causes = client.predict("Toy Model", api_name="/model_detail")
    assert status_md.startswith("**Toy Model**: verified \\(sampled\\, n\\=652\\, 0 disagreements\\)")
    causes_frame = table(causes)
    # The file says no object was found: every statement of every image fails for its subject.
    statements = {c: 4 * sum(len(p.statements) for p in prompts if p.category == c) for c in causes_frame["category"]}
    assert dict(zip(causes_frame["category"], causes_frame["subject_missing"], strict=True)) == statements
    assert list(causes_frame["failed"]) == list(causes_frame["subject_missing"])
    other = ["target_missing", "forbidden_rendered", "wrong_value", "dead_zone"]
    assert causes_frame[other].to_numpy().sum() == 0


# ------------------------------------------------------------------------ pure views


def test_leaderboard_prefers_verified_and_hides_rejected():
    row = {"model": "m", "overall": 10.0, "1:0": 1.0}
    entries = [
        Entry(model_name="M", model_key="m", submitter="a", created_at=1, status="verified", row=row),
        Entry(
            model_name="M", model_key="m", submitter="a", created_at=2, status="pending", row={**row, "overall": 50.0}
        ),
        Entry(model_name="R", model_key="r", submitter="b", created_at=3, status="rejected", row=row),
    ]
    assert [e.created_at for e in newest_entries(entries)] == [1]
    frame = leaderboard_frame(entries, include_paper=False)
    assert frame["model"].tolist() == ["M"] and frame["overall"].tolist() == [10.0]
    waiting = Entry(model_name="W", model_key="w", submitter="c", created_at=4, status="pending", row=row)
    assert leaderboard_frame([*entries, waiting], include_paper=False)["model"].tolist() == ["M"]  # not ranked
    paper = leaderboard_frame([], include_paper=True)
    assert len(paper) == len(PAPER_ROWS) and set(paper["status"]) == {REPORTED}


def test_preload_loads_models_once_and_survives_missing_weights(prompts, tmp_path):
    from negt2ibench.api import Evaluator
    from negt2ibench.core.errors import MissingWeightsError
    from space.gpu_calls import preload_models

    class CountingModels(RectanglePerception):
        loads = 0

        def load_all(self, prompts=()):
            CountingModels.loads += 1
            if CountingModels.loads > 1:
                raise MissingWeightsError("RFDETRSegXLarge")

    evaluator = Evaluator(perception=CountingModels())
    build_app(prompts=prompts[:10], store=SQLiteStore(tmp_path / "a.sqlite"), evaluator=evaluator, preload=True)
    assert CountingModels.loads == 1
    preload_models(evaluator)  # missing weights: logged, the app still builds
    assert CountingModels.loads == 2
    build_app(prompts=prompts[:10], store=SQLiteStore(tmp_path / "b.sqlite"), evaluator=evaluator, preload=False)
    assert CountingModels.loads == 2


def test_a_space_with_login_refuses_anonymous_submissions(prompts, data, tmp_path):
    """On a Hugging Face Space the per-user limits need an account: no sign-in, nothing stored."""
    store = SQLiteStore(tmp_path / "login.sqlite")
    demo = build_app(prompts=prompts[:10], store=store, perception=RectanglePerception(), require_login=True)
    client = local_client(launch_local(demo), verbose=False)
    try:
        status, submissions = client.predict(
            handle_file(str(data["good"])), "Anon Model", "", IMAGES_REPO, "main", api_name="/submit"
        )
        assert status.startswith("**Error:**") and "sign in with Hugging Face" in status
        assert store.list_entries() == [] and len(table(submissions)) == 0
    finally:
        client.close()
        demo.close()


@pytest.mark.slow
def test_waiting_submissions_get_a_job_at_start_up_and_again_while_the_app_runs(prompts, data, tmp_path):
    import shutil

    from dataset_builder.records import PromptIndex
    from leaderboard.intake.submissions import SubmissionForm, submit
    from leaderboard.jobs.job_keeper import JobPolicy

    store = SQLiteStore(tmp_path / "recheck.sqlite")

    def send(name: str):
        form = SubmissionForm(name, "", IMAGES_REPO, "main", submitter="alice")
        return submit(
            store, form, data["good"], prompts=PromptIndex(prompts), score=None, resolve_revision=pinned_commit
        )

    first = send("Waiting Model")  # stored while no app runs: it waits, saying why
    assert first.status == "pending" and first.attempts == 1
    hub = tmp_path / "hub"  # the images dataset appears only later
    hub.mkdir()
    demo = build_app(
        prompts=prompts,
        store=store,
        perception=RectanglePerception(),
        verify_backend=double_jobs(store.locator(), tmp_path, images_from=hub),
        recheck_every=0.2,
        job_policy=JobPolicy(retry_after_s=0),  # a job that found no images is launched again at once
    )
    try:
        wait_for(lambda: "images not reachable" in store.get_entry(first.submission_id).reason, "the first job", 120)
        waits = store.get_entry(first.submission_id)
        assert waits.status == "pending" and waits.attempts == 2 and waits.run is None
        shutil.copytree(data["images"], hub / IMAGES_REPO)
        wait_for(lambda: store.get_entry(first.submission_id).status == "verified", "a job once the images exist", 240)
        second = send("Later Model")  # stored behind the app's back: the periodic pass finds it
        wait_for(lambda: store.get_entry(second.submission_id).status == "verified", "the periodic pass's job", 240)
        assert store.get_entry(second.submission_id).job.stage in ("RUNNING", "COMPLETED")
    finally:
        demo.close()
    demo.rechecker._thread.join(timeout=30)  # closing the app stops its passes
    assert not demo.rechecker._thread.is_alive()


def test_missing_weights_are_not_looked_for_on_every_click(prompts, tmp_path):
    from leaderboard.intake.submissions import hub_images
    from negt2ibench.core.errors import MissingWeightsError
    from space.app import Handlers
    from space.shared_state import WorkDir

    calls = []

    def no_weights(image, prompt, model_key, sample_index):
        calls.append(prompt.prompt_id)
        raise MissingWeightsError("RFDETRSegXLarge", "not in the cache")  # the evaluator's own advice

    on = Handlers(
        prompts=prompts[:10],
        index=PromptIndex(prompts[:10]),
        store=SQLiteStore(tmp_path / "w.sqlite"),
        score_on_gpu=no_weights,
        config=PRESETS["current"],
        open_images=hub_images,
        limits=SubmissionLimits(),
        require_login=False,
        work_dir=WorkDir(),
    )
    scene = str(scene_png(tmp_path / "scene.png"))
    # the message is Markdown with every punctuation mark escaped: compare the text it shows
    answers = [re.sub(r"\\(.)", r"\1", on.score(scene, prompts[0].prompt_id, "")[1]) for _ in range(3)]
    assert len(calls) == 1 and answers[0] == answers[1] == answers[2]
    # said once, in one line: the notice at the top of the tab holds the whole advice (its command)
    assert answers[0] == (
        "**Error:** not scored: the scorer's model weights are not on this machine (the note at the top of this tab "
        "says how to get them; this app looks for them again in 5 minutes)"
    )
    on.work_dir.cleanup()


def test_the_score_tab_says_before_any_score_that_weights_are_missing_or_a_stand_in_scores(prompts, tmp_path):
    from leaderboard.intake.submissions import hub_images
    from negt2ibench.core.errors import MissingWeightsError
    from space.app import Handlers
    from space.shared_state import WorkDir

    def handlers(**fields) -> Handlers:
        return Handlers(
            prompts=prompts[:10],
            index=PromptIndex(prompts[:10]),
            store=SQLiteStore(tmp_path / "n.sqlite"),
            score_on_gpu=lambda *args: None,
            config=PRESETS["current"],
            open_images=hub_images,
            limits=SubmissionLimits(),
            require_login=False,
            work_dir=WorkDir(),
            **fields,
        )

    def no_weights():
        raise MissingWeightsError("RF-DETR Seg XL and SAM 2.1", "/somewhere/on/this/machine")

    def no_torch():
        raise ModuleNotFoundError("No module named 'torch'", name="torch")

    assert handlers(check_weights=no_weights).scorer_notice() == (
        "**Score cannot run here yet.** Scoring needs the evaluator's model weights (RF\\-DETR Seg XL and SAM 2\\.1), "
        "and they are not on this machine. Fetch them once with `negt2ibench download-models` (it needs internet "
        "access), then start this app again, or start it with `negt2ibench serve --weights-dir DIR` on a folder that "
        "`download-models --dir DIR` filled."
    )
    assert (
        handlers(check_weights=no_torch)
        .scorer_notice()
        .startswith("**Score cannot run here:** the scorer needs torch, which is not installed here")
    )
    assert (
        handlers(check_weights=no_weights, stand_in="RectanglePerception")
        .scorer_notice()
        .startswith("**Not the evaluator's models:** verdicts here come from RectanglePerception")
    )
    assert handlers(check_weights=lambda: None).scorer_notice() == ""


def test_the_temporary_folder_goes_when_the_app_closes(tmp_path):
    demo = build_app(
        prompts=load_prompts(None)[:10], store=SQLiteStore(tmp_path / "lb.sqlite"), perception=RectanglePerception()
    )
    folder = demo.work_dir.path
    assert folder.is_dir() and folder.name.startswith("negt2i_space_")
    (folder / "negt2ibench_leaderboard.csv").write_text("model\n")
    demo.close()
    assert not folder.exists()
    assert demo.work_dir.path.is_dir() and demo.work_dir.path != folder  # a reopened app gets a new one
    demo.close()
