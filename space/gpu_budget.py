"""What each `@spaces.GPU` call of the Space asks ZeroGPU for, the quotas it must fit, and what a
refusal tells the visitor. Pure: no gradio, no model.

ZeroGPU's arithmetic, as the pinned client does it (spaces 0.51.3, `spaces/zero/client.py`): a call
asks for `duration` seconds (`spaces.GPU(duration=...)`, here a callable of the call's own
arguments); `get_duration_seconds` multiplies it by the GPU's `duration_factor`
(`spaces/zero/configs.json`: 1.5 on the RTX Pro 6000 Blackwell behind the default `large` size,
1.0 on an H200) unless the size is `xlarge`, and `schedule()` refuses a call asking for more than is
left of the visitor's daily quota. The quota is then charged with the time the call used, at most
what it asked for. Daily quotas (huggingface/hub-docs `docs/hub/spaces-zerogpu.md`, "Usage Tiers"):
`DAILY_QUOTA_SECONDS`.

The budgets (docs/space.md, "ZeroGPU's quota", has their derivation): a call is a warm-up (the
forked worker's CUDA start, the models' weights moved onto the GPU, the first kernels loaded) and
then its work: images for the scorer, distinct questions for a judge. They are sized so that an
anonymous visitor's 2 minutes allow `VISITOR_DAY` (4 single-image scores and a judge call) on the
default size; `tests/space/test_gpu_budget.py` checks it with the client's own arithmetic and the
pinned package's `configs.json`.
"""

from __future__ import annotations

import math

# The scorer (RF-DETR, SAM 2.1, SigLIP 2, Depth-Anything V2), one image at a time.
SCORE_WARM_UP_SECONDS = 10.0
SCORE_SECONDS_PER_IMAGE = 2.0
# A VLM judge of the 8B class (Qwen3-VL-8B: 0.105 s a question on an H200 in the paper's Table 8).
JUDGE_WARM_UP_SECONDS = 15.0
JUDGE_SECONDS_PER_QUESTION = 1.0

DAILY_QUOTA_SECONDS = {"unauthenticated": 120, "free account": 300, "PRO": 2400}
# What an anonymous visitor must be able to do in a day.
VISITOR_DAY = {"single-image scores": 4, "judge calls": 1}
DEFAULT_DURATION_FACTOR = 1.5  # configs.json's for the default `large` size (shown in the docs and the README)


def score_seconds(images: int) -> int:
    """The GPU seconds a scoring call of `images` images asks for: warm-up + images × the per-image budget."""
    if images < 1:
        raise ValueError(f"a scoring call scores at least one image, got {images}")
    return math.ceil(SCORE_WARM_UP_SECONDS + images * SCORE_SECONDS_PER_IMAGE)


def judge_seconds(questions: int) -> int:
    """The GPU seconds a judge call asking `questions` distinct questions asks for."""
    if questions < 1:
        raise ValueError(f"a judge call asks at least one question, got {questions}")
    return math.ceil(JUDGE_WARM_UP_SECONDS + questions * JUDGE_SECONDS_PER_QUESTION)


def charged_seconds(duration: float, factor: float = DEFAULT_DURATION_FACTOR) -> int:
    """What a call of `duration` seconds asks of the quota on a GPU with this factor (the client's
    `round(duration * duration_factor)` on the `large` size)."""
    return round(duration * factor)


# -- A refusal, said to the visitor ---------------------------------------------------------------

_SIGN_IN = (
    "log in to huggingface.co and reload this page (ZeroGPU gives {anonymous} minutes a day without an account, "
    "{free} with a free one, {pro} with PRO)"
)


def _minutes(kind: str) -> int:
    return DAILY_QUOTA_SECONDS[kind] // 60


def refusal_advice(title: str, reason: str) -> str:
    """What to do after the ZeroGPU client refused a call with `title` ("ZeroGPU quota exceeded",
    "ZeroGPU illegal duration", "ZeroGPU queue timeout", ...) and `reason`, its message."""
    sign_in = _SIGN_IN.format(free=_minutes("free account"), anonymous=_minutes("unauthenticated"), pro=_minutes("PRO"))
    if "queue" in title.lower() or "no gpu was available" in reason.lower():
        return "every GPU was busy: try again in a minute"
    if "quota" in title.lower() or "duration" in title.lower() or "credits" in title.lower():
        if "pro zerogpu" in reason.lower():
            return "try again when your daily quota resets (24 hours after your first GPU use), or add credits"
        if "free zerogpu" in reason.lower():
            return (
                "try again when your daily quota resets (24 hours after your first GPU use), or subscribe to PRO "
                f"for {_minutes('PRO')} minutes a day"
            )
        return f"{sign_in}; or try again when the quota resets (24 hours after the first GPU use)"
    return "try again in a minute"


def refusal_line(title: str, reason: str) -> str:
    """The one line shown for a ZeroGPU refusal: the client's own reason, then what to do."""
    first = " ".join(reason.split()) or title
    return f"no GPU time for this now ({title}: {first.rstrip('. ')}); {refusal_advice(title, reason)}"
