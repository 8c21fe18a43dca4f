"""GenEval (Ghosh et al., 2023) on this project's detectors: its 553 prompts, its rules exactly as its
code has them (`rules`, no model), its perception on Mask2Former or RF-DETR with CLIP colours, the
scorer (`negt2ibench geneval score`, a user of `evaluator.engine`) and its summary with what GenEval
never says: completeness, a bootstrap interval and the order-to-space diagnostic (docs/geneval.md).

    from evaluator.geneval import GenEvalDetection, geneval_verdict
    verdict = geneval_verdict(metadata, {"dog": [GenEvalDetection((10, 20, 60, 80), 0.87)]})
    verdict.correct, verdict.reason
    geneval_reward(metadata, detections).score  # Flow-GRPO's partial credit (reward-server's)
"""

from .config import GENEVAL, GENEVAL_VERSION, PRESETS, GenEvalConfig
from .prompts import GenEvalPrompt, load_geneval_prompts
from .rules import (
    GenEvalDetection,
    GenEvalReward,
    GenEvalVerdict,
    geneval_reward,
    geneval_verdict,
    relative_position,
    select_detections,
)

__all__ = [
    "GENEVAL",
    "GENEVAL_VERSION",
    "PRESETS",
    "GenEvalConfig",
    "GenEvalDetection",
    "GenEvalPrompt",
    "GenEvalReward",
    "GenEvalVerdict",
    "geneval_reward",
    "geneval_verdict",
    "load_geneval_prompts",
    "relative_position",
    "select_detections",
]
