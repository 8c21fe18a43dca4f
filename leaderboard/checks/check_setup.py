"""What every check of a submission runs with: the preset, the limits, the scorer and images, the secret.

The setups of the state machine (`SubmissionLimits` for uploads, `SpotCheckSetup` for advancing a
submission through its checks) and the two environment variables a verification job is launched
with: the server's secret that seeds every sample (`SECRET_ENV`, read by `verification_secret`) and
the job's id, which a run's claim names (`JOB_ID_ENV`). The job backends (`leaderboard.jobs`) set
them and the checks read them, so they live here, below both, in a module that imports no model.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dataset_builder.records import PromptIndex, PromptRecord
from evaluator.config import PRESETS, EvaluatorConfig
from evaluator.results import ResultRecord
from leaderboard.checks.spot_check_policy import SpotCheckPlan, spot_check_plan
from leaderboard.store.image_sources import ImageSourceFactory, hub_images

if TYPE_CHECKING:
    from PIL import Image

__all__ = [
    "DEFAULT_LIMITS",
    "JOB_ID_ENV",
    "PRESET",
    "SECRET_ENV",
    "ScoreFn",
    "SpotCheckSetup",
    "SubmissionLimits",
    "verification_secret",
]

PRESET = "current"  # the preset the leaderboard scores with and accepts submissions for
SECRET_ENV = "NEGT2I_VERIFY_SECRET"
JOB_ID_ENV = "NEGT2I_VERIFY_JOB_ID"  # set by the backend that launched this run (its job's id)
_process_secret = secrets.token_bytes(32)  # when NEGT2I_VERIFY_SECRET is not set: this process's own

# Re-scores a batch of images: (images, prompts, model_key, sample_indices) -> one result each, in order.
ScoreFn = Callable[[list["Image.Image"], list[PromptRecord], str, list[int]], list[ResultRecord]]


@dataclass(frozen=True)
class SubmissionLimits:
    max_bytes: int = 200 * 1024 * 1024  # 19,200 result lines are ~30-60 MB
    per_day: int = 5  # stored submissions per submitter per 24 hours (refused uploads do not count)
    invalid_per_hour: int = 10  # uploads refused as invalid files per client per hour (the Space's handler)
    # None: `spot_check_plan(images)`, the stated guarantee; a fixed plan only for tests of other things.
    spot_check: SpotCheckPlan | None = None

    def plan_for(self, images: int) -> SpotCheckPlan:
        """The spot check's plan for a file.

        Args:
            images: the submitted file's images.

        Returns:
            The plan these limits fix, else the one `spot_check_plan` sizes for `images`.
        """
        return self.spot_check or spot_check_plan(images)


DEFAULT_LIMITS = SubmissionLimits()


@dataclass(frozen=True)
class SpotCheckSetup:
    """What advancing a submission needs: the prompts, the scorer (None: none here) and the images."""

    prompts: PromptIndex
    score: ScoreFn | None
    open_images: ImageSourceFactory = hub_images
    config: EvaluatorConfig = PRESETS[PRESET]
    limits: SubmissionLimits = DEFAULT_LIMITS
    secret: bytes | None = None  # the sample's secret (None: `verification_secret()`)


def verification_secret() -> bytes:
    """The server's secret for sample seeds.

    Returns:
        NEGT2I_VERIFY_SECRET's bytes (set it as a Space secret, so a maintainer with the same secret
        draws the same samples), else a secret drawn once for this process.
    """
    configured = os.environ.get(SECRET_ENV)
    return configured.encode("utf-8") if configured else _process_secret
