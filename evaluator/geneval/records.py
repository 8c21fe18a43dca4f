"""GenEval's result line: the fields GenEval's `evaluate_images.py` writes (:247-258), so its own
`summary_scores.py` reads the file unchanged, then this project's (which model and image, preset,
detector, version, config hash, library versions, error).

An image that cannot be scored is an error row: `correct` is null (pandas reads it as NaN and
`summary_scores.py`'s means skip it, as `geneval summary` does), `reason` starts with "error: " and
`error` says why. Files are appended to, resumed and merged by `evaluator.resultio`
(`evaluator.geneval.scoring.GENEVAL_FILES` is their `evaluator.engine.RecordFiles`; this module
imports no torch, so a command checks a results file before the models load).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from evaluator.resultio import read_results

Key = tuple[str, str, int]


class GenEvalRecord(BaseModel):
    """One image's GenEval verdict (docs/geneval.md#result-lines)."""

    model_config = ConfigDict(extra="forbid")

    # GenEval's fields, in its order (evaluate_images.py:247-258).
    filename: str
    tag: str
    prompt: str
    correct: bool | None  # None on error rows only
    reason: str
    metadata: str  # the prompt's metadata as JSON text (GenEval groups prompts by it)
    details: str  # JSON: class → [[x0, y0, x1, y1, score], ...] of the kept detections
    # This project's.
    model_key: str
    prompt_id: str  # geneval_{index:05d}
    sample_index: int
    preset: str
    detector: str
    evaluator_version: str
    config_hash: str
    versions: dict[str, str] = Field(default_factory=dict)
    error: str | None = None

    @property
    def key(self) -> Key:
        return (self.model_key, self.prompt_id, self.sample_index)

    @property
    def passed(self) -> bool:
        return bool(self.correct)


def read_geneval_records(path: str | Path, *, strict: bool = True) -> list[GenEvalRecord]:
    """Every line of a results file written by `negt2ibench geneval score`."""
    return read_results(path, strict=strict, record_type=GenEvalRecord)
