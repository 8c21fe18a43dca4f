"""The Space's GPU functions on ZeroGPU: a call only inside a visitor's request, no GPU function behind
the background spot check, and a refusal by the real `spaces` client (quota spent) shown as its
reason and what to do, never a stack."""

from __future__ import annotations

import json
import re
import warnings
from datetime import timedelta
from importlib.resources import files
from types import SimpleNamespace

import gradio as gr
import pytest
from PIL import Image

import space.app
from dataset_builder.loading import load_prompts
from dataset_builder.records import PromptIndex
from evaluator.config import PRESETS
from leaderboard.intake.submissions import hub_images
from leaderboard.store.sqlite_store import SQLiteStore
from negt2ibench.api import Evaluator
from space import gpu_calls
from space.app import Handlers, build_app
from space.gpu_budget import score_seconds
from space.shared_state import WorkDir
from space.tabs.score.judge_panel import JudgePanel
from tests.helpers.net import launch_local, local_client
from tests.helpers.space_helpers import RectanglePerception, pinned_commit, scene_png, wait_for, write_results

PROMPT_ID = "directional_pos1_neg0_003"  # a motorcycle left of a bowl: the double's layout passes it


@pytest.fixture(scope="module")
def prompts():
    return load_prompts(None)


@pytest.fixture
def zero_gpu(monkeypatch):
    """This process as if it ran on ZeroGPU (the spaces decorator itself stays a no-op: no GPU here)."""
    monkeypatch.setattr(gpu_calls, "on_zero_gpu", lambda: True)
    monkeypatch.setattr(space.app, "on_zero_gpu", lambda: True)


class Headers(dict):
    """Request headers as the client reads them (`.get`, and a `__dict__`)."""


def client_refusal(monkeypatch, *, token: str | None, auth: str | None = None) -> tuple[gr.Error, dict]:
    """The error the pinned client's `schedule()` raises when the quota has 4 s left, for a visitor
    with `token` (None: no ZeroGPU token, as a call from a background thread) on the Blackwell
    `large` size of its own configs.json; and what it asked the scheduler."""
    import spaces.zero.client as client
    import spaces.zero.config as zero_config
    from spaces.zero import utils as zero_utils
    from spaces.zero.api import QuotaInfos, ScheduleMetadata

    configs = json.loads(files("spaces.zero").joinpath("configs.json").read_text())
    asked: dict = {}

    class SchedulerDouble:
        def schedule(self, **kwargs):
            asked.update(kwargs)
            return QuotaInfos(left=4, wait=timedelta(hours=3)), ScheduleMetadata(auth=auth)

    monkeypatch.setattr(client, "api_client", SchedulerDouble)
    monkeypatch.setattr(zero_utils, "self_cgroup_device_path", lambda: "")
    monkeypatch.setattr(zero_config, "get_config", lambda: max(configs, key=lambda c: c["duration_factor"]))
    request = None if token is None else SimpleNamespace(headers=Headers({"x-ip-token": token, "x-gradio-user": "app"}))
    with pytest.raises(gr.Error) as refused, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the client warns that this token is no JWT
        client.schedule(task_id=1, request=request, duration=timedelta(seconds=score_seconds(1)))
    return refused.value, asked


def handlers_with(score_on_gpu, prompts) -> Handlers:
    return Handlers(
        prompts=prompts,
        index=PromptIndex(prompts),
        store=None,  # type: ignore[arg-type]
        score_on_gpu=score_on_gpu,
        config=PRESETS["current"],
        open_images=hub_images,
        limits=None,  # type: ignore[arg-type]
        require_login=False,
        work_dir=WorkDir(),
    )


@pytest.mark.parametrize(
    ("token", "auth", "reason", "advice"),
    [
        (None, None, "Space app has reached its GPU limit", "log in to huggingface.co and reload this page"),
        (
            "not-a-jwt",
            "regular",
            "You have exceeded your free ZeroGPU quota (18s requested vs. 4s left). Try again in 3:00:00",
            "or subscribe to PRO for 40 minutes a day",
        ),
    ],
)
def test_a_quota_refusal_shows_the_clients_reason_and_what_to_do(
    monkeypatch, prompts, tmp_path, token, auth, reason, advice
):
    refused, asked = client_refusal(monkeypatch, token=token, auth=auth)
    assert asked["duration_seconds"] == 18  # 12 s asked for, x 1.5 on that GPU
    line = gpu_calls.zero_gpu_refusal(refused)
    assert line is not None and reason in line and advice in line

    def refusing(*args):
        raise refused

    on = handlers_with(refusing, prompts)
    visitor = SimpleNamespace(username=None, client=SimpleNamespace(host="198.51.100.7"))
    try:
        _, verdict, _, result_file = on.score(str(scene_png(tmp_path / "scene.png")), PROMPT_ID, "", visitor)
    finally:
        on.work_dir.cleanup()
    shown = re.sub(r"\\(.)", r"\1", verdict)  # the Markdown's escapes taken out
    assert result_file is None and shown.startswith("**Error:** no GPU time for this now (ZeroGPU quota exceeded: ")
    assert reason in shown and advice in shown and "Traceback" not in shown
    panel = JudgePanel("qwen2_5_vl_7b", "pos", refusing, lambda prompt_id, custom: PromptIndex(prompts)[prompt_id])
    summary, frame = panel.judge(str(tmp_path / "scene.png"), PROMPT_ID, "")
    shown = re.sub(r"\\(.)", r"\1", summary)
    assert shown.startswith("**Error:** judge qwen2_5_vl_7b: no GPU time for this now") and frame.empty
    assert reason in shown and advice in shown


def test_other_errors_are_not_taken_for_a_refusal():
    assert gpu_calls.zero_gpu_refusal(RuntimeError("ZeroGPU quota exceeded")) is None
    assert gpu_calls.zero_gpu_refusal(gr.Error("the image is too small")) is None  # titled "Error"


@pytest.mark.slow
def test_a_gpu_function_runs_inside_a_request_and_refuses_outside_one(zero_gpu, prompts, tmp_path):
    score_on_gpu = gpu_calls.gpu_scorer(Evaluator(PRESETS["current"], perception=RectanglePerception()))
    prompt = PromptIndex(prompts)[PROMPT_ID]
    image = Image.open(scene_png(tmp_path / "scene.png"))
    with pytest.raises(gpu_calls.OutsideRequestError, match="only inside a visitor's request"):
        score_on_gpu(image, prompt, "upload", 0)  # this test's thread: no gradio event, no visitor

    def score(_: str) -> str:
        record, _annotated = score_on_gpu(image, prompt, "upload", 0)
        return "PASS" if record.passed else "FAIL"

    with gr.Blocks() as demo:
        button, verdict = gr.Button(), gr.Textbox()
        button.click(score, button, verdict, api_name="score")
    client = local_client(launch_local(demo), verbose=False)
    try:
        assert client.predict("go", api_name="/score") == "PASS"  # a visitor's request: it runs
    finally:
        client.close()
        demo.close()


@pytest.mark.slow
def test_on_zero_gpu_the_space_rescores_nothing_itself(zero_gpu, prompts, tmp_path, monkeypatch):
    # ZeroGPU without a token: no job backend can run, so entries wait with the reason; the app's own
    # models are never called outside a visitor's request.
    monkeypatch.delenv("NEGT2I_VERIFY_BACKEND", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    few = prompts[:10]
    perception = RectanglePerception()
    demo = build_app(
        prompts=few,
        store=SQLiteStore(tmp_path / "lb.sqlite"),
        perception=perception,
        preload=False,
        recheck_every=3600,
        resolve_revision=pinned_commit,
    )
    try:
        assert demo.verify_backend is not None and demo.verify_backend.name == "none"
        on = demo.rechecker.run.__self__  # the handlers whose `recheck` the background thread runs
        request = SimpleNamespace(username=None, client=SimpleNamespace(host="198.51.100.7"))
        results = write_results(tmp_path / "toy.jsonl", few, "toy_model", passed=False)
        on.submit(str(results), "Toy", "", "org/toy-images", "main", request)  # wakes the jobs' pass
        store = on.store
        wait_for(lambda: store.list_entries()[0].job is not None, "the jobs' pass over the entry")
        entry = store.list_entries()[0]
        assert entry.status != "verified" and demo.verify_backend.reason in entry.job.message
        assert perception.calls == 0
    finally:
        demo.close()


def test_a_space_fetches_the_missing_weights_once_then_loads_them(tmp_path, monkeypatch):
    import evaluator.models.weights as weights

    evaluator = Evaluator(PRESETS["current"], weights_dir=tmp_path / "weights")  # an empty folder: all missing
    fetched = []

    def download(config, weights_dir, *, echo):  # the network's stand-in: records what would be fetched
        fetched.append((config.name, weights_dir))
        echo("would download")
        return [tmp_path / "weights" / "x"]

    monkeypatch.setattr(weights, "download", download)
    assert gpu_calls.fetch_missing_weights(evaluator) == [tmp_path / "weights" / "x"]
    assert fetched == [("current", tmp_path / "weights")]
    # A test double in the models' place has nothing to fetch.
    assert gpu_calls.fetch_missing_weights(Evaluator(PRESETS["current"], perception=RectanglePerception())) == []
    assert len(fetched) == 1


def test_build_app_on_a_space_fetches_the_weights_before_it_serves(tmp_path, monkeypatch, prompts):
    calls = []
    monkeypatch.setattr(gpu_calls, "fetch_missing_weights", lambda evaluator: calls.append(evaluator.weights_dir))
    monkeypatch.setattr(space.app, "preload_models", gpu_calls.preload_models)
    monkeypatch.setenv("SPACE_ID", "org/negt2ibench")
    demo = build_app(
        prompts=prompts[:4], store=SQLiteStore(tmp_path / "lb.sqlite"), weights_dir=tmp_path / "w", require_login=False
    )
    demo.close()
    assert calls == [tmp_path / "w"]  # then the models' load, which logs what is still missing
    monkeypatch.delenv("SPACE_ID")
    demo = build_app(prompts=prompts[:4], store=SQLiteStore(tmp_path / "lb2.sqlite"), weights_dir=tmp_path / "w")
    demo.close()
    assert calls == [tmp_path / "w"]  # not on a Space: nothing fetched at start-up


def test_the_gpu_scorer_uses_the_evaluator_it_was_given(tmp_path):
    prompt = next(
        p for p in load_prompts(None) if p.prompt_id == "directional_pos1_neg0_003"
    )  # motorcycle left of bowl
    doubles = RectanglePerception(), RectanglePerception(absent=prompt.objects[:1])
    scorers = [gpu_calls.gpu_scorer(Evaluator(PRESETS["current"], perception=double)) for double in doubles]
    image = Image.open(scene_png(tmp_path / "scene.png"))
    (found, annotated), (missing, _) = (scorer(image, prompt, "upload", 0) for scorer in scorers)
    assert (found.passed, missing.passed) == (True, False) and [d.calls for d in doubles] == [1, 1]
    assert isinstance(annotated, Image.Image) and annotated.size == image.size
