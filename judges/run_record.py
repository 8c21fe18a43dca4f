"""A judge run's cost record: what one run did and cost (counts per output, time, memory; the paper's
Table 8 columns), for `judge` (`JudgeRun`) and `negvqa` (`judges.negvqa.runner.NegVQARun`) alike.

A run writes its record beside its results (`run_record_path`: ``OUT.run.json`` for ``--out
OUT.jsonl``, in every mode, ``all`` included; ``OUT.rank{i}.run.json`` per process under
``accelerate launch``), so `agree` finds the cost columns of Table 2 without being told
(`validation.costs` reads it). A rerun that did nothing new (everything already done) keeps the
record of the run that did.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from evaluator.engine import OutputCounts, RecordRun
from negt2ibench.core.atomic import write_atomic

if TYPE_CHECKING:
    from .adapters import JudgeAdapter

RUN_RECORD_SUFFIX = ".run.json"


def run_record_path(out: str | Path, *, rank: int = 0, world: int = 1) -> Path:
    """Where the run record of ``--out OUT`` goes.

    Args:
        out: the run's results file (``OUT.jsonl``).
        rank: this process's rank under a launcher.
        world: the number of processes.

    Returns:
        ``OUT.run.json`` (``OUT.rank{i}.run.json`` under several ranks), beside OUT.
    """
    out = Path(out)
    stem = f"{out.stem}.rank{rank}" if world > 1 else out.stem
    return out.with_name(stem + RUN_RECORD_SUFFIX)


class JudgeFields(TypedDict):
    """The fields of a run record that name its judge and where it ran (`RunRecord.judge_fields`)."""

    judge: str
    hub_id: str
    params: str
    device: str
    dtype: str


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
        """What `run_records` did to this output (its `outputs[...]`); `questions` is counted apart.

        Args:
            counts: the engine's counts of this output.
        """
        self.path, self.already_done = counts.path, counts.already_done
        self.judged, self.errors, self.passed = counts.written - counts.errors, counts.errors, counts.passed


@dataclass(kw_only=True)
class RunRecord:
    """What every judge run records: the judge, where it ran, its outputs' counts, its time and memory.

    A run fills it in three steps: `load` (the model, timed apart), the engine's run, `finish`
    (the outputs' counts, the time since the judging started, the peak memory); then `write`
    puts it beside the results. Each kind of run adds its own fields and its JSON (`to_dict`).
    """

    judge: str
    hub_id: str
    params: str  # the judge's parameter count as the paper labels it ("8B"; "?" when unknown)
    device: str
    dtype: str
    outputs: dict[str, ModeCounts]  # by output name: a judge's modes, NegVQA's forms
    load_seconds: float = 0.0
    seconds: float = 0.0  # judging wall time (images read, questions asked, records written), load excluded
    peak_memory_bytes: int = 0
    memory_kind: str = ""  # "cuda" (torch.cuda.max_memory_allocated) or "rss" (process peak RSS)
    error_reasons: dict[str, int] = field(default_factory=dict)
    rank: int = 0
    world: int = 1

    @staticmethod
    def judge_fields(adapter: JudgeAdapter) -> JudgeFields:
        """The fields that name ADAPTER's judge and where it runs.

        Args:
            adapter: the loaded judge.

        Returns:
            judge, hub_id, params, device, dtype.
        """
        spec = adapter.spec
        return {
            "judge": spec.key,
            "hub_id": spec.hub_id,
            "params": spec.params,
            "device": str(adapter.device),
            "dtype": adapter.dtype_name,
        }

    def load(self, adapter: JudgeAdapter) -> None:
        """Load ADAPTER's model, its time kept apart (`load_seconds`) and its peak memory counted from here.

        Args:
            adapter: the judge whose weights to load.

        Raises:
            MissingWeightsError: a weight of the judge is not on this machine.
        """
        adapter.reset_peak_memory()
        started = time.perf_counter()
        adapter.load()
        self.load_seconds = time.perf_counter() - started

    def finish(self, run: RecordRun, adapter: JudgeAdapter, started: float) -> None:
        """Take what the engine's RUN did, the judging time and the adapter's peak memory.

        Args:
            run: the engine's run (each output's counts, the error reasons, the rank).
            adapter: the judge (its peak memory is read).
            started: `time.perf_counter()` when judging started.
        """
        for name, counts in run.outputs.items():
            self.outputs[name].take(counts)
        self.error_reasons = dict(run.error_reasons)
        self.rank, self.world = run.rank, run.world
        self.seconds = time.perf_counter() - started
        self.peak_memory_bytes, self.memory_kind = adapter.peak_memory()

    def did_work(self) -> bool:
        """Whether this run asked its judge anything (a run that did not keeps the old record).

        Returns:
            True when it judged at least one image (each kind of run says what counts).
        """
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The record as written to ``OUT.run.json``.

        Returns:
            The record's fields, JSON-ready.
        """
        raise NotImplementedError

    def write(self, out: str | Path) -> Path | None:
        """Write this record beside ``--out OUT`` (atomically).

        Args:
            out: the run's results file.

        Returns:
            The record's path (`run_record_path`), or None, and nothing written, when the run did
            no work (a resumed run with nothing left keeps the record of the run that did).
        """
        if not self.did_work():
            return None
        path = run_record_path(out, rank=self.rank, world=self.world)
        return write_atomic(path, json.dumps(self.to_dict(), indent=2, allow_nan=False) + "\n")

    def _rank_prefix(self) -> str:
        return f"[rank {self.rank}/{self.world}] " if self.world > 1 else ""

    def _memory_text(self) -> str:
        return f"{self.peak_memory_bytes / 2**30:.2f} GiB {'GPU' if self.memory_kind == 'cuda' else 'peak RSS'}"

    def _memory_fields(self) -> dict[str, Any]:
        return {"peak_memory_gib": round(self.peak_memory_bytes / 2**30, 3), "memory_kind": self.memory_kind}


@dataclass(kw_only=True)
class JudgeRun(RunRecord):
    """What one `judge` run did and cost (paper Table 8): load apart, then s/question, s/image, memory.
    Its `outputs` are its modes."""

    total: int = 0  # images in the source (after --limit)
    images: int = 0  # images whose questions were answered in this run
    questions: int = 0  # distinct (image, question) pairs asked in this run

    @property
    def modes(self) -> dict[str, ModeCounts]:
        """Each mode's counts (the run's `outputs`)."""
        return self.outputs

    @property
    def seconds_per_question(self) -> float | None:
        return self.seconds / self.questions if self.questions else None

    @property
    def seconds_per_image(self) -> float | None:
        return self.seconds / self.images if self.images else None

    def questions_per_image(self, mode: str) -> float | None:
        """The questions MODE's new records carry per judged image.

        Args:
            mode: one of the run's modes.

        Returns:
            The mean, or None when it judged no image.
        """
        counts = self.modes[mode]
        return counts.questions / counts.judged if counts.judged else None

    def did_work(self) -> bool:
        """Whether this run judged any image.

        Returns:
            True when it did.
        """
        return bool(self.images)

    def to_dict(self) -> dict[str, Any]:
        """The record as written to ``OUT.run.json``.

        Returns:
            The judge, where it ran, the images and questions, the times, the memory, each mode's counts
            and the error reasons.
        """
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
            **self._memory_fields(),
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
        """The run in one line, as `negt2ibench judge` prints it.

        Returns:
            The line.
        """
        per_mode = "; ".join(
            f"{mode}: {c.judged + c.errors} new ({c.passed} passed, {c.errors} errors), {c.already_done} already done"
            + (f", {self.questions_per_image(mode):.2f} q/img" if c.judged else "")
            + f" → {c.path}"
            for mode, c in self.modes.items()
        )
        rates = ""
        if self.questions:
            rates = f", {self.seconds_per_question:.3g} s/question, {self.seconds_per_image:.3g} s/image"
        return (
            f"{self._rank_prefix()}{self.judge} on {self.device} ({self.dtype}): {per_mode}. "
            f"{self.images} of {self.total} images judged, {self.questions} questions in {self.seconds:.1f} s"
            f"{rates}; model load {self.load_seconds:.1f} s (apart); {self._memory_text()}"
        )
