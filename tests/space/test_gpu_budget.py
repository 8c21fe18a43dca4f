"""Every `@spaces.GPU` call of the Space asks for a duration that fits ZeroGPU's daily quotas, by the
pinned client's own arithmetic: its `get_duration_seconds` over each GPU of its own `configs.json`
(read here, at test time), and `schedule()`'s rule that a call asking for more than is left is refused."""

from __future__ import annotations

import ast
import json
from datetime import timedelta
from importlib.resources import files
from pathlib import Path

import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from space import gpu_calls
from space.gpu_budget import (
    DAILY_QUOTA_SECONDS,
    DEFAULT_DURATION_FACTOR,
    VISITOR_DAY,
    charged_seconds,
    judge_seconds,
    refusal_advice,
    score_seconds,
)

REPO = Path(__file__).resolve().parents[2]
GPU_FUNCTIONS = {"score_on_gpu", "judge_on_gpu"}  # every function of space/ under spaces.GPU


def spaces_configs() -> list[dict]:
    """The pinned spaces package's GPU configurations, as its client reads them."""
    return json.loads(files("spaces.zero").joinpath("configs.json").read_text())


def client_charge(duration: int, config: dict, monkeypatch: pytest.MonkeyPatch) -> int:
    """The seconds `schedule()` asks of the quota for a call of `duration` on the GPU of `config`,
    through the client's own `get_duration_seconds` (size: the default, `large`)."""
    import spaces.zero.client as client
    import spaces.zero.config as zero_config

    with monkeypatch.context() as patch:
        patch.setattr(zero_config, "get_config", lambda: config)
        return round(client.get_duration_seconds(timedelta(seconds=duration), None))


def fits_the_day(charges: list[int], quota: int) -> bool:
    """Whether `schedule()` admits each call in turn when each used all it asked for."""
    left = quota
    for charge in charges:
        if charge > left:
            return False
        left -= charge
    return True


def gpu_decorations() -> list[tuple[str, str, ast.Call | None, list[str]]]:
    """(file, function, the spaces.GPU call, the decorators' names) of every function of space/
    decorated with spaces.GPU, and any other use of spaces.GPU as (file, '', call, [])."""
    found: list[tuple[str, str, ast.Call | None, list[str]]] = []
    for path in sorted((REPO / "space").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        decorating: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names = [ast.unparse(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
                for decorator in node.decorator_list:
                    target = decorator.func if isinstance(decorator, ast.Call) else decorator
                    if ast.unparse(target) in ("spaces.GPU", "GPU"):
                        call = decorator if isinstance(decorator, ast.Call) else None
                        found.append((path.name, node.name, call, names))
                        decorating.add(id(decorator))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("spaces.GPU", "GPU"):
                if id(node) not in decorating:
                    found.append((path.name, "", node, []))
    return found


def test_every_gpu_function_asks_a_duration_sized_by_its_inputs_and_only_inside_a_request():
    decorations = gpu_decorations()
    assert {name for _, name, _, _ in decorations} == GPU_FUNCTIONS, decorations
    for path, name, call, decorators in decorations:
        assert path == "gpu_calls.py", (path, name)
        assert call is not None, f"{name}: spaces.GPU without a duration (the client's default is 60 s)"
        keywords = {keyword.arg: keyword.value for keyword in call.keywords}
        assert set(keywords) == {"duration"}, f"{name}: {set(keywords)} (no size: the default, large)"
        assert isinstance(keywords["duration"], ast.Name), f"{name}: the duration is a callable of the inputs"
        assert decorators[0] == "request_only", f"{name}: outside a visitor's request it must refuse"


@pytest.fixture
def asked(monkeypatch):
    """The (duration, size) each GPU function of space.gpu_calls asks spaces.GPU for, by name."""
    recorded: dict[str, tuple] = {}

    def recording_gpu(task=None, *, duration=None, size=None):
        def decorate(function):
            recorded[function.__name__] = (duration, size)
            return function

        return decorate

    monkeypatch.setattr(gpu_calls.spaces, "GPU", recording_gpu)
    gpu_calls.gpu_scorer(evaluator=None)  # the evaluator is only used inside a call
    for mode in ("pos", "neg", "whole"):
        gpu_calls.gpu_judge(adapter=None, mode=mode)
        recorded[f"judge_on_gpu/{mode}"] = recorded.pop("judge_on_gpu")
    return recorded


def test_the_durations_asked_for_follow_the_budget(asked):
    image = Image.new("RGB", (1024, 1024))
    prompts = load_prompts(None)
    duration, size = asked["score_on_gpu"]
    assert size is None and callable(duration)
    assert {duration(image, prompt, "upload", 0) for prompt in prompts[:50]} == {score_seconds(1)}
    from judges.questions import questions_for

    for mode in ("pos", "neg", "whole"):
        duration, size = asked[f"judge_on_gpu/{mode}"]
        for prompt in prompts[::97]:
            asked_for = {question.text for question in questions_for(prompt, mode)}
            assert duration(image, prompt) == judge_seconds(len(asked_for))
    # hand-checked: 10 s warm-up + 1 image x 2 s; 15 s + 9 questions x 1 s (the corpus's most, pos mode)
    assert (score_seconds(1), score_seconds(3), judge_seconds(9), judge_seconds(1)) == (12, 16, 24, 16)


@pytest.mark.slow
def test_an_anonymous_visitors_day_fits_every_gpu_of_the_pinned_client(asked, monkeypatch):
    image = Image.new("RGB", (1024, 1024))
    prompts = load_prompts(None)
    score_duration = asked["score_on_gpu"][0](image, prompts[0], "upload", 0)
    judge_duration = max(asked[f"judge_on_gpu/{mode}"][0](image, p) for mode in ("pos", "neg") for p in prompts)
    configs = spaces_configs()
    assert len(configs) >= 2 and {c["duration_factor"] for c in configs} >= {DEFAULT_DURATION_FACTOR}
    for config in configs:
        score = client_charge(score_duration, config, monkeypatch)
        judge = client_charge(judge_duration, config, monkeypatch)
        day = [score] * VISITOR_DAY["single-image scores"] + [judge] * VISITOR_DAY["judge calls"]
        assert fits_the_day(day, DAILY_QUOTA_SECONDS["unauthenticated"]), (config["model"], day)
        assert score == charged_seconds(score_duration, config["duration_factor"])
    # On the Blackwell `large` size (factor 1.5): 4 x 18 s + 36 s = 108 s of the 120 (hand-computed).
    blackwell = max(configs, key=lambda c: c["duration_factor"])
    day = [client_charge(score_duration, blackwell, monkeypatch)] * 4 + [
        client_charge(judge_duration, blackwell, monkeypatch)
    ]
    assert day == [18, 18, 18, 18, 36]
    # The check can fail: the 120 s every call asked for before cannot even start on that GPU.
    assert not fits_the_day([client_charge(120, blackwell, monkeypatch)], DAILY_QUOTA_SECONDS["unauthenticated"])


def test_the_quotas_are_the_hubs():
    import spaces.zero.client as client

    # huggingface/hub-docs@242f4a1, docs/hub/spaces-zerogpu.md, "Usage Tiers": 2, 5 and 40 minutes a day;
    # the client's own PRO figure agrees.
    assert DAILY_QUOTA_SECONDS == {"unauthenticated": 120, "free account": 300, "PRO": 2400}
    assert DAILY_QUOTA_SECONDS["PRO"] == client.PRO_QUOTA_MINUTES * 60


def test_budgets_refuse_empty_calls():
    with pytest.raises(ValueError, match="at least one image"):
        score_seconds(0)
    with pytest.raises(ValueError, match="at least one question"):
        judge_seconds(0)


@pytest.mark.parametrize(
    ("title", "reason", "advice"),
    [
        ("ZeroGPU quota exceeded", "Space app has reached its GPU limit.", "log in to huggingface.co"),
        (
            "ZeroGPU quota exceeded",
            "You have exceeded your free ZeroGPU quota (18s requested vs. 4s left). Try again in 3:00:00.",
            "subscribe to PRO for 40 minutes a day",
        ),
        ("ZeroGPU quota exceeded", "You have exceeded your Pro ZeroGPU quota (18s requested vs. 4s left).", "credits"),
        ("ZeroGPU illegal duration", "The requested GPU duration (180s) is larger than the maximum", "log in"),
        ("ZeroGPU queue timeout", "No GPU was available after 60s.", "try again in a minute"),
        ("ZeroGPU worker error", "GPU task aborted", "try again in a minute"),
    ],
)
def test_refusal_advice(title, reason, advice):
    assert advice in refusal_advice(title, reason)
