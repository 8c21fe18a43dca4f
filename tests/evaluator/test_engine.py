"""`evaluator.engine` on its own, through a new user written in a few lines (as a GenEval scorer or
`leaderboard verify` would be): a step that "measures" each image's width into two outputs. Resume
per output, error rows for unreadable images, unknown prompt ids and an image that breaks its
batch, the order of the records, and ranks that merge. The engine's users (`score`, `judge`,
`ablate`) have their own tests (evaluator/test_pipeline, evaluator/test_loader, judges/test_runner,
validation/test_ablate)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from dataset_builder.grammar import parse_prompt
from dataset_builder.layout import rank_path
from dataset_builder.records import PromptIndex
from evaluator.engine import BatchStep, Failed, Job, consecutive, error_kind, run_records
from evaluator.loader import Work
from evaluator.pipeline import ImageItem
from evaluator.resultio import read_results
from evaluator.verdict import error_record
from negt2ibench.core.errors import MissingWeightsError
from negt2ibench.core.launch import Launch
from tests.helpers.launch_helpers import FakeState

PROMPT = parse_prompt("a photo of a red cup").model_copy(update={"prompt_id": "color_pos1_neg0_000"})
PROMPTS = PromptIndex([PROMPT])
BREAKS = 33  # the width of an image the forward fails on


def png(width: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, 40), (200, 10, 10)).save(buffer, format="PNG")
    return buffer.getvalue()


def width_step(calls: list[int]) -> BatchStep:
    """Output "wide": passed when the image is at least 64 px wide; output "narrow": the opposite."""

    def forward(pairs):
        calls.append(len(pairs))
        if any(entry.rgb().width == BREAKS for _, entry in pairs):
            raise RuntimeError("out of memory")
        return [entry.rgb().width for _, entry in pairs]

    def records(job, outcome):
        item = job.work.item
        out = []
        for name in job.needed:
            record = error_record(item.prompt_id, job.model_key, item.sample_index, "x")
            if isinstance(outcome, Failed):
                out.append((name, record.model_copy(update={"error": outcome.reason})))
            else:
                passed = (outcome >= 64) == (name == "wide")
                out.append((name, record.model_copy(update={"error": None, "passed": passed})))
        return out

    return BatchStep(forward, records, failure="width failed")


def jobs(widths: list[int | bytes], prompt_id: str = PROMPT.prompt_id) -> list[Job]:
    items = [
        ImageItem(prompt_id if i != 5 else "color_pos9_neg9_000", i, lambda w=w: w if isinstance(w, bytes) else png(w))
        for i, w in enumerate(widths)
    ]
    return [Job(Work.look_up(item, PROMPTS), "m") for item in items]


WIDTHS = [80, 40, BREAKS, b"not an image", 100, 90, 70]  # 5: an unknown prompt id


def run(tmp_path, calls, launch=None, todo=WIDTHS):
    outputs = {"wide": tmp_path / "wide.jsonl", "narrow": tmp_path / "narrow.jsonl"}
    kinds = ("unknown prompt id", "bad image", "width failed")
    return run_records(
        jobs(todo), outputs, width_step(calls), batch_size=3, desc="w", progress=False, error_kinds=kinds, launch=launch
    )


def test_a_new_user_gets_records_error_rows_and_counts_per_output(tmp_path):
    calls = []
    result = run(tmp_path, calls, Launch())
    wide = read_results(tmp_path / "wide.jsonl")
    assert [r.sample_index for r in wide] == list(range(7))  # work-list order, each once
    assert [r.passed for r in wide if not r.error] == [True, False, True, True]
    errors = {r.sample_index: r.error for r in wide if r.error}
    assert errors[2] == "width failed: RuntimeError: out of memory"  # only the image that breaks its batch
    assert errors[3].startswith("bad image:") and errors[5].startswith("unknown prompt id 'color_pos9_neg9_000'")
    # batch 1 (0, 1, 2) fails whole, then each image alone; batch 2 has 4 readable of (3, 4, 5); batch 3: (6)
    assert calls == [3, 1, 1, 1, 1, 1]
    counts = result.outputs["narrow"]
    assert (counts.written, counts.errors, counts.passed, counts.already_done) == (7, 3, 1, 0)
    assert dict(result.error_reasons) == {"width failed": 2, "bad image": 2, "unknown prompt id": 2}
    assert result.images == 7


def test_resume_runs_an_image_only_for_the_outputs_that_lack_it(tmp_path):
    run(tmp_path, [], Launch(), todo=WIDTHS[:4])
    (tmp_path / "narrow.jsonl").write_bytes((tmp_path / "narrow.jsonl").read_bytes()[:-20])  # a torn last line
    calls = []
    result = run(tmp_path, calls, Launch())
    assert result.outputs["wide"].already_done == 4 and result.outputs["narrow"].already_done == 3
    assert result.images == 4  # the torn image (for "narrow" only) and the three new ones
    assert [r.sample_index for r in read_results(tmp_path / "narrow.jsonl")] == [0, 1, 2, 3, 4, 5, 6]
    assert [r.sample_index for r in read_results(tmp_path / "wide.jsonl")] == [0, 1, 2, 3, 4, 5, 6]
    again = []
    assert run(tmp_path, again, Launch()).images == 0 and again == []


def test_ranks_write_their_own_files_and_the_main_process_merges(tmp_path, monkeypatch):
    import accelerate

    for rank in (1, 0):  # rank 0 (main) runs last and merges
        monkeypatch.setattr(accelerate, "PartialState", lambda rank=rank: FakeState(rank))
        result = run(tmp_path, [])
        assert (result.rank, result.world) == (rank, 2)
        assert result.outputs["wide"].path == rank_path(tmp_path / "wide.jsonl", rank)
    assert [r.sample_index for r in read_results(rank_path(tmp_path / "wide.jsonl", 1))] == [4, 5, 6]
    alone = tmp_path / "alone"
    run(alone, [], Launch())
    for name in ("wide.jsonl", "narrow.jsonl"):  # the merge sorts by key; the lone run is in work-list order
        merged, lone = ((folder / name).read_bytes().splitlines() for folder in (tmp_path, alone))
        assert len(merged) == 7 and sorted(merged) == sorted(lone)


def test_a_missing_weight_stops_the_run_after_the_batches_already_seen(tmp_path):
    def forward(pairs):
        if any(job.work.item.sample_index >= 3 for job, _ in pairs):
            raise MissingWeightsError("some-model", "offline")
        return [1] * len(pairs)

    step = BatchStep(forward, lambda job, outcome: width_step([]).records(job, 100), failure="x")
    with pytest.raises(MissingWeightsError):
        run_records(jobs([80] * 6), {"wide": tmp_path / "w.jsonl"}, step, batch_size=3, desc="w", launch=Launch())
    assert [r.sample_index for r in read_results(tmp_path / "w.jsonl")] == [0, 1, 2]


def test_helpers():
    assert consecutive(5, 2) == [[0, 1], [2, 3], [4]] and consecutive(0, 3) == []
    assert error_kind("bad image: truncated", ("unknown prompt id", "bad image")) == "bad image"
    assert error_kind("disk on fire", ("bad image",)) == "other"


def test_leaving_the_verdict_thread_waits_for_each_job_and_raises_the_last_ones_error():
    # a batch's records are written in the verdict thread: the run must not end before the last ones
    # are, and an error there (a full disk) must reach the run, not vanish with the thread
    import threading

    from evaluator.engine import VerdictThread

    release, done = threading.Event(), []

    def slow():
        release.wait(60)
        done.append("slow")

    def broken():
        raise OSError("no space left on device")

    with pytest.raises(OSError, match="no space left"):
        with VerdictThread(depth=4) as verdicts:
            verdicts.submit(slow)
            verdicts.submit(broken)  # still waiting when the block ends
            release.set()
    assert done == ["slow"]
