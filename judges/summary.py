"""What one judge run did and cost: counts per mode, and the paper's Table 8 columns.

A run writes its summary beside its results as a *run record* (`run_record_path`: ``OUT.run.json``
for ``--out OUT.jsonl``, in every mode, ``all`` included; ``OUT.rank{i}.run.json`` per process
under ``accelerate launch``), so `agree` finds the cost columns of Table 2 without being told.
A rerun that judged nothing new (everything already done) keeps the record of the run that did.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from evaluator.engine import OutputCounts
from negt2ibench.core.atomic import write_atomic

RUN_RECORD_SUFFIX = ".run.json"


def run_record_path(out: str | Path, *, rank: int = 0, world: int = 1) -> Path:
    """Where the run record of ``--out OUT`` goes: ``OUT.run.json`` (``OUT.rank{i}.run.json`` under several ranks)."""
    out = Path(out)
    stem = f"{out.stem}.rank{rank}" if world > 1 else out.stem
    return out.with_name(stem + RUN_RECORD_SUFFIX)


@dataclass
class ModeCounts:
    """One output of a run (a judge's mode, a NegVQA form): where, what was there, what was added."""

    path: Path
    already_done: int = 0
    judged: int = 0  # new records without error
    errors: int = 0
    passed: int = 0
    questions: int = 0  # questions this mode's new records carry (for questions per image)

    def take(self, counts: OutputCounts) -> None:
        """What `run_records` did to this output (its `outputs[...]`); `questions` is counted apart."""
        self.path, self.already_done = counts.path, counts.already_done
        self.judged, self.errors, self.passed = counts.written - counts.errors, counts.errors, counts.passed


@dataclass
class JudgeSummary:
    """What one run did and cost (paper Table 8): load apart, then s/question, s/image, memory."""

    judge: str
    hub_id: str
    device: str
    dtype: str
    modes: dict[str, ModeCounts]
    total: int = 0  # images in the source (after --limit)
    images: int = 0  # images whose questions were answered in this run
    questions: int = 0  # distinct (image, question) pairs asked in this run
    load_seconds: float = 0.0
    seconds: float = 0.0  # judging wall time (images read, questions asked, records written), load excluded
    peak_memory_bytes: int = 0
    memory_kind: str = ""  # "cuda" (torch.cuda.max_memory_allocated) or "rss" (process peak RSS)
    error_reasons: dict[str, int] = field(default_factory=dict)
    rank: int = 0
    world: int = 1
    params: str = ""  # the judge's parameter count as the paper labels it ("8B"; "?" when unknown)

    @property
    def seconds_per_question(self) -> float | None:
        return self.seconds / self.questions if self.questions else None

    @property
    def seconds_per_image(self) -> float | None:
        return self.seconds / self.images if self.images else None

    def questions_per_image(self, mode: str) -> float | None:
        counts = self.modes[mode]
        return counts.questions / counts.judged if counts.judged else None

    def to_dict(self) -> dict:
        return {
            "judge": self.judge,
            "hub_id": self.hub_id,
            "params": self.params,
            "device": self.device,
            "dtype": self.dtype,
            "rank": self.rank,
            "world": self.world,
            "images_in_source": self.total,
            "images_judged": self.images,
            "questions_asked": self.questions,
            "load_seconds": round(self.load_seconds, 3),
            "seconds": round(self.seconds, 3),
            "seconds_per_question": self.seconds_per_question,
            "seconds_per_image": self.seconds_per_image,
            "peak_memory_gib": round(self.peak_memory_bytes / 2**30, 3),
            "memory_kind": self.memory_kind,
            "modes": {
                mode: {
                    "out": str(counts.path),
                    "new_records": counts.judged + counts.errors,
                    "errors": counts.errors,
                    "passed": counts.passed,
                    "already_done": counts.already_done,
                    "questions_per_image": self.questions_per_image(mode),
                }
                for mode, counts in self.modes.items()
            },
            "error_reasons": dict(sorted(self.error_reasons.items())),
        }

    def line(self) -> str:
        prefix = f"[rank {self.rank}/{self.world}] " if self.world > 1 else ""
        per_mode = "; ".join(
            f"{mode}: {c.judged + c.errors} new ({c.passed} passed, {c.errors} errors), {c.already_done} already done"
            + (f", {self.questions_per_image(mode):.2f} q/img" if c.judged else "")
            + f" → {c.path}"
            for mode, c in self.modes.items()
        )
        rates = ""
        if self.questions:
            rates = f", {self.seconds_per_question:.3g} s/question, {self.seconds_per_image:.3g} s/image"
        memory = f"{self.peak_memory_bytes / 2**30:.2f} GiB {'GPU' if self.memory_kind == 'cuda' else 'peak RSS'}"
        return (
            f"{prefix}{self.judge} on {self.device} ({self.dtype}): {per_mode}. "
            f"{self.images} of {self.total} images judged, {self.questions} questions in {self.seconds:.1f} s"
            f"{rates}; model load {self.load_seconds:.1f} s (apart); {memory}"
        )


def write_run_record(summary: JudgeSummary, out: str | Path) -> Path | None:
    """Write SUMMARY as the run record beside ``--out OUT`` (atomically); None, and nothing
    written, when the run judged no image (a resumed run with nothing left keeps the old record)."""
    if not summary.images:
        return None
    path = run_record_path(out, rank=summary.rank, world=summary.world)
    return write_atomic(path, json.dumps(summary.to_dict(), indent=2, allow_nan=False) + "\n")
