"""NegT2IBench: a polarity benchmark for text-to-image models.

The Python API (imported on first use, so `import negt2ibench` stays light):

    from negt2ibench import Evaluator, load_prompts, parse_prompt

    ev = Evaluator(preset="current", device="auto")          # models load lazily
    out = ev.score(image, "color_pos0_neg1_004")              # a prompt id, a PromptRecord or a text
    records = ev.score_many(images, prompts, batch_size=8)    # the records `negt2ibench score` writes

    GenEvalEvaluator("geneval").score_source("geneval_images/", out="r.jsonl")  # GenEval (docs/geneval.md)

See `negt2ibench.api` and the manual's docs/api.md.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# Public name → "module:attribute", imported on first access (PEP 562).
_EXPORTS: dict[str, str] = {
    "Evaluator": "negt2ibench.api:Evaluator",
    "ScoreOutput": "negt2ibench.api:ScoreOutput",
    "GenEvalEvaluator": "negt2ibench.geneval_api:GenEvalEvaluator",
    "EvaluatorConfig": "evaluator.config:EvaluatorConfig",
    "PRESETS": "evaluator.config:PRESETS",
    "PromptRecord": "dataset_builder.records:PromptRecord",
    "ResultRecord": "evaluator.results:ResultRecord",
    "load_prompts": "dataset_builder.loading:load_prompts",
    "parse_prompt": "dataset_builder.grammar:parse_prompt",
    "build_report": "evaluator.report:build_report",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module 'negt2ibench' has no attribute {name!r}")
    module_name, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value  # later look-ups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
