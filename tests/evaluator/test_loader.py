"""Scoring with loader workers and overlapped verdicts on the tiny random models: the same
file, byte for byte, as the sequential path, error rows from the workers, interruption and resume,
the verdict thread's guarantees, the models' inputs, and the worker defaults."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

import evaluator.loader as loader
from evaluator.config import PRESETS
from evaluator.engine import consecutive
from evaluator.loader import Work, default_num_workers, resolve_num_workers
from evaluator.models.inputs import one_thread
from evaluator.observation import ImageObservation, ObjectObservation
from evaluator.pipeline import ImageItem, score_batches, score_images
from evaluator.resultio import read_results
from negt2ibench import Evaluator
from negt2ibench.cli import main
from negt2ibench.core.errors import MissingWeightsError, UsageError
from tests.helpers.perception_helpers import make_prompt, random_image, tiny_models, tiny_perception

CONFIG = PRESETS["current"]
PROMPTS = [
    make_prompt("color", ["tv remote", "cup"], "color_pos1_neg0_000"),
    make_prompt("proximity", ["car", "bus"], "proximity_pos1_neg0_000"),
    make_prompt("depth", ["dog", "cat"], "depth_pos0_neg1_000", polarity="negated"),
    make_prompt("directional", ["cat", "zebra"], "directional_pos1_neg0_000"),  # the tiny detector never sees a zebra
    make_prompt("material", ["bench", "bowl"], "material_pos1_neg0_000"),
]
# The bad files and the error row each gets (its reason's start).
BAD = {
    "color_pos1_neg0_000_2.png": "bad image: not a recognised image format",
    "depth_pos0_neg1_000_2.png": "bad image: corrupt or truncated image",
    "directional_pos1_neg0_000_2.png": "bad image: image too small: 20x20 px",
    "material_pos1_neg0_000_2.png": "bad image: image too large: 8000x5001 px = 40.0 MP",
    "color_pos9_neg9_000_0.png": "unknown prompt id 'color_pos9_neg9_000'",
}


def png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """Two good images per prompt, and the five bad files of BAD among them (sorted by name)."""
    images = tmp_path_factory.mktemp("throughput") / "images"
    images.mkdir()
    for number, prompt in enumerate(PROMPTS):
        for sample in range(2):
            random_image(300 + 10 * number + sample, (96, 72)).save(images / f"{prompt.prompt_id}_{sample}.png")
    (images / "color_pos1_neg0_000_2.png").write_bytes(b"not an image at all")
    whole = png(random_image(7, (96, 72)))
    (images / "depth_pos0_neg1_000_2.png").write_bytes(whole[: len(whole) // 2])
    Image.new("RGB", (20, 20)).save(images / "directional_pos1_neg0_000_2.png")
    Image.new("L", (8000, 5001)).save(images / "material_pos1_neg0_000_2.png")  # 40.008 MP: refused from the header
    random_image(8, (96, 72)).save(images / "color_pos9_neg9_000_0.png")
    return images


def run(folder: Path, out: Path, workers: int, config=CONFIG, perception=None, batch_size: int = 3):
    return score_images(
        folder,
        PROMPTS,
        perception or tiny_perception(config),
        out_path=out,
        config=config,
        model_key="tiny",
        batch_size=batch_size,
        progress=False,
        num_workers=workers,
    )


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["current", "no_sam"])
def test_two_workers_write_the_sequential_file_byte_for_byte_with_the_error_rows(folder, tmp_path, preset):
    config = PRESETS[preset]
    perception = tiny_perception(config)
    files = {}
    for workers in (0, 2):
        summary = run(folder, tmp_path / f"w{workers}.jsonl", workers, config, perception)
        assert (summary.total, summary.scored, summary.errors) == (15, 10, 5)
        assert summary.error_reasons == {"bad image": 4, "unknown prompt id": 1}
        files[workers] = (tmp_path / f"w{workers}.jsonl").read_bytes()
    assert files[2] == files[0]

    records = read_results(tmp_path / "w2.jsonl")
    names = sorted(path.name for path in folder.iterdir())
    assert [f"{r.prompt_id}_{r.sample_index}.png" for r in records] == names  # the source's order
    errors = {f"{r.prompt_id}_{r.sample_index}.png": r.error for r in records if r.error}
    assert set(errors) == set(BAD)
    for name, reason in BAD.items():
        assert errors[name].startswith(reason), (name, errors[name])
    present = [obj.name for r in records if not r.error for obj in r.objects if obj.present]
    assert "cat" in present and "zebra" not in present  # models ran on real detections


@pytest.mark.slow
def test_score_many_gives_the_same_records_with_and_without_workers():
    ev = Evaluator(CONFIG, perception=tiny_perception(CONFIG), prompts=PROMPTS)
    good = [random_image(40 + n, (96, 72)) for n in range(4)]
    images = [good[0], png(good[1]), b"broken", good[2], np.asarray(good[3])]
    prompts = [p.prompt_id for p in PROMPTS]
    sequential = ev.score_many(images, prompts, batch_size=2, progress=False, num_workers=0)
    workers = ev.score_many(images, prompts, batch_size=2, progress=False, num_workers=2)
    assert [r.model_dump_json() for r in workers] == [r.model_dump_json() for r in sequential]
    assert [r.error is None for r in workers] == [True, True, False, True, True]
    with pytest.raises(UsageError, match="num_workers must be a non-negative integer"):
        ev.score_many(images, prompts, num_workers=-1)


class StopAfter:
    """A ModelPerception (inputs from the workers, rule masks) that raises KeyboardInterrupt on
    the call after `allowed` calls of `observe`."""

    def __init__(self, inner, allowed: int):
        self.inner, self.allowed, self.calls = inner, allowed, 0

    def worker_preparer(self, categories):
        return self.inner.worker_preparer(categories)

    def observe(self, images, prompts, **options):
        if self.calls >= self.allowed:
            raise KeyboardInterrupt
        self.calls += 1
        return self.inner.observe(images, prompts, **options)


@pytest.mark.slow
def test_an_interrupted_run_keeps_whole_lines_and_the_resumed_file_equals_an_uninterrupted_one(folder, tmp_path):
    perception = tiny_perception(CONFIG)
    run(folder, tmp_path / "whole.jsonl", 0, perception=perception, batch_size=2)
    whole = (tmp_path / "whole.jsonl").read_bytes()

    out = tmp_path / "out.jsonl"
    with pytest.raises(KeyboardInterrupt):
        run(folder, out, 2, perception=StopAfter(perception, allowed=3), batch_size=2)
    partial = out.read_bytes()
    # Interrupted in the forwards of batch 5 (batch 2 is two error rows, which need none): the four
    # batches before it were still judged and written, whole lines only.
    assert partial.endswith(b"\n") and whole.startswith(partial) and len(partial.splitlines()) == 8

    summary = run(folder, out, 2, perception=StopAfter(perception, allowed=100), batch_size=2)
    assert summary.already_done == 8 and summary.scored + summary.errors == 7
    assert out.read_bytes() == whole


KILLED_SCRIPT = """
import sys, time
from pathlib import Path

import torch

torch.set_num_threads(int(sys.argv[3]))  # the forwards' floats of the test process
from tests.helpers.perception_helpers import tiny_perception
from tests.evaluator.test_loader import CONFIG, PROMPTS

from evaluator.pipeline import score_images


class Hangs:
    \"\"\"The tiny models for 3 forwards, then a hang until the process is killed.\"\"\"

    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def worker_preparer(self, categories):
        return self.inner.worker_preparer(categories)

    def observe(self, images, prompts, **options):
        self.calls += 1
        while self.calls > 3:
            time.sleep(1)
        return self.inner.observe(images, prompts, **options)


score_images(Path(sys.argv[1]), PROMPTS, Hangs(tiny_perception(CONFIG)), out_path=Path(sys.argv[2]), config=CONFIG,
             model_key="tiny", batch_size=2, progress=False, num_workers=2)
"""


@pytest.mark.slow
def test_a_killed_run_with_workers_leaves_whole_lines_and_resumes_to_the_uninterrupted_file(folder, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.helpers.launch_helpers import REPO, process_env

    perception = tiny_perception(CONFIG)
    run(folder, tmp_path / "whole.jsonl", 0, perception=perception, batch_size=2)
    whole = (tmp_path / "whole.jsonl").read_bytes()
    script, out = tmp_path / "killed.py", tmp_path / "out.jsonl"
    script.write_text(KILLED_SCRIPT)
    command = [sys.executable, str(script), str(folder), str(out), str(torch.get_num_threads())]
    child = subprocess.Popen(command, cwd=REPO, env=process_env(), start_new_session=True, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 600
        while not (out.exists() and out.read_bytes().count(b"\n") >= 8):  # batches 1-4: the forwards before the hang
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the child wrote no 8 records"
            time.sleep(0.2)
        os.killpg(child.pid, signal.SIGKILL)  # the child's session: it and its loader workers
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
        child.wait(timeout=60)
        child.stderr.close()
    partial = out.read_bytes()
    assert partial.endswith(b"\n") and whole.startswith(partial) and len(partial.splitlines()) == 8

    summary = run(folder, out, 2, perception=perception, batch_size=2)
    assert summary.already_done == 8 and out.read_bytes() == whole


@pytest.mark.slow
def test_ranks_each_with_their_own_workers_merge_into_the_file_of_ranks_without_workers(folder, tmp_path, monkeypatch):
    import accelerate

    from tests.helpers.launch_helpers import FakeState

    perception = tiny_perception(CONFIG)
    for workers in (0, 2):
        for rank in (1, 0):  # rank 0 (main) runs last and merges
            monkeypatch.setattr(accelerate, "PartialState", lambda rank=rank: FakeState(rank))
            run(folder, tmp_path / f"w{workers}" / "results.jsonl", workers, perception=perception)
    for name in ("results.jsonl", "results.rank0.jsonl", "results.rank1.jsonl"):
        assert (tmp_path / "w2" / name).read_bytes() == (tmp_path / "w0" / name).read_bytes()
    assert len(read_results(tmp_path / "w2" / "results.jsonl")) == 15


# -- the verdict thread -----------------------------------------------------------------------


class Boxes:
    """Sees every prompt object as a box in its own column; records which batches it observed."""

    def __init__(self):
        self.batches = 0
        self.second_batch = threading.Event()

    def observe(self, images, prompts):
        self.batches += 1
        if self.batches == 2:
            self.second_batch.set()
        observations = []
        for image, prompt in zip(images, prompts, strict=True):
            width, height = image.size
            objects = {}
            for column, name in enumerate(prompt.objects):
                mask = np.zeros((height, width), dtype=bool)
                mask[10:30, 5 + 30 * column : 25 + 30 * column] = True
                box = (5.0 + 30 * column, 10.0, 25.0 + 30 * column, 30.0)
                scores = {"red": 30.0, "wooden": 30.0}
                objects[name] = ObjectObservation(name, True, 0.9, box, mask, value_scores=scores)
            observations.append(ImageObservation(width=width, height=height, objects=objects))
        return observations


def work_list(count: int) -> list[Work]:
    prompt = PROMPTS[1]
    return [Work(ImageItem(prompt.prompt_id, n, lambda n=n: random_image(n, (96, 72))), prompt) for n in range(count)]


def test_verdicts_of_a_batch_overlap_the_next_batchs_forwards():
    perception, records = Boxes(), []

    def on_record(record):
        if not records:  # first record of batch 1: only returns once batch 2 is in the models
            assert perception.second_batch.wait(timeout=120), "batch 2 did not start while batch 1 was judged"
        records.append(record)

    work = work_list(4)
    score_batches(work, consecutive(4, 2), perception, config=CONFIG, model_key="m", on_record=on_record, num_workers=0)
    assert [r.sample_index for r in records] == [0, 1, 2, 3] and all(r.error is None for r in records)


def test_a_failed_write_stops_the_loop_and_nothing_after_it_is_written():
    written, batches = [], []

    def on_record(record):
        if record.sample_index == 2:
            raise OSError("disk full")
        written.append(record.sample_index)

    with pytest.raises(OSError, match="disk full"):
        score_batches(
            work_list(8),
            consecutive(8, 2),
            Boxes(),
            config=CONFIG,
            model_key="m",
            on_record=on_record,
            on_batch=batches.append,
            num_workers=2,
        )
    assert written == [0, 1] and batches == [2]


def test_a_model_that_cannot_load_mid_run_stops_it_after_writing_the_batches_already_seen():
    class DepthMissing(Boxes):  # e.g. Depth-Anything loads at the first depth prompt, offline
        def observe(self, images, prompts):
            if self.batches == 1:
                raise MissingWeightsError("depth-anything/Depth-Anything-V2-Large-hf", "offline")
            return super().observe(images, prompts)

    written = []
    with pytest.raises(MissingWeightsError, match="Depth-Anything-V2-Large-hf"):
        score_batches(
            work_list(6), consecutive(6, 2), DepthMissing(), config=CONFIG, model_key="m", on_record=written.append
        )
    assert [r.sample_index for r in written] == [0, 1]


# -- the models' inputs ---------------------------------------------------------------------


def test_inputs_made_apart_equal_the_processors_batched_inputs_and_rfdetrs():
    perception = tiny_perception(CONFIG)
    _, (_, sam_processor), _, (_, depth_processor) = tiny_models()
    images = [random_image(n, (120, 90)) for n in range(3)]
    preparer = perception.input_preparer({"depth"})
    prepared = [preparer(image, "depth") for image in images]
    sam = sam_processor(images=images, return_tensors="pt")["pixel_values"]
    depth = depth_processor(images=images, return_tensors="pt")["pixel_values"]
    assert torch.equal(torch.stack([p.sam for p in prepared]), sam)
    assert torch.equal(torch.stack([p.depth for p in prepared]), depth)
    detector = perception.detector  # rfdetr's predict: [0, 1], square resize without antialias, normalised
    import torchvision.transforms.functional as TF

    with one_thread(None):  # as in a loader worker: the float resize rounds differently with more threads
        expected = TF.normalize(
            torch.stack(
                [
                    TF.resize(TF.pil_to_tensor(i).float() / 255.0, [detector.resolution] * 2, antialias=False)
                    for i in images
                ]
            ),
            detector.means,
            detector.stds,
        )
    assert torch.equal(torch.stack([p.detector for p in prepared]), expected)
    threads = torch.get_num_threads()
    try:  # made in a process with more intra-op threads, the inputs are the same floats
        torch.set_num_threads(2)
        again = preparer(images[0], "depth")
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(again.detector, prepared[0].detector) and torch.equal(again.sam, prepared[0].sam)
    assert preparer(images[0], "color").depth is None  # only depth prompts get the depth input
    assert perception.worker_preparer({"color"}) is not None  # on the CPU: made in the workers


@pytest.mark.slow
def test_rule_masks_only_leave_the_same_records_and_skip_an_unmeasurable_pair():
    from evaluator.verdict import decide_statements

    perception = tiny_perception(CONFIG)
    images = [random_image(300 + 10 * n, (96, 72)) for n in range(len(PROMPTS))]
    every = perception.observe(images, PROMPTS)
    rules = perception.observe(images, PROMPTS, masks="rules")
    for prompt, a, b in zip(PROMPTS, every, rules, strict=True):
        same = [
            decide_statements(prompt, o, model_key="m", sample_index=0, config=CONFIG).model_dump_json() for o in (a, b)
        ]
        assert same[0] == same[1]
    cat_all, cat_rules = every[3].objects["cat"], rules[3].objects["cat"]
    assert cat_all.present and not every[3].objects["zebra"].present
    assert cat_all.mask is not None and cat_rules.mask is None  # its partner is absent: no rule reads it
    assert len(rules[3].detections) == 0 and len(every[3].detections) == 1
    present = [o for o in rules[0].objects.values() if o.present]
    assert present and all(o.mask is not None for o in present)  # attribute crops need every mask
    with pytest.raises(ValueError, match="masks must be one of all, rules"):
        perception.observe(images[:1], PROMPTS[:1], masks="some")


# -- how many workers -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cpus, local_world, fork, expected",
    [
        (1, None, True, 0),
        (2, None, True, 2),
        (16, "8", True, 2),
        (16, "16", True, 0),
        (64, None, True, 8),
        (8, None, False, 0),
    ],
)
def test_default_workers_share_the_cpus_among_a_launchers_processes(monkeypatch, cpus, local_world, fork, expected):
    monkeypatch.setattr(loader, "available_cpus", lambda: cpus)
    monkeypatch.setattr(loader, "can_fork", lambda: fork)
    if local_world is None:
        monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    else:
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local_world)
    assert default_num_workers() == expected
    assert resolve_num_workers(None) == expected


def test_asked_workers_are_checked_and_fall_back_where_they_cannot_fork(monkeypatch):
    assert resolve_num_workers(3) == 3 and resolve_num_workers("1") == 1
    with pytest.raises(UsageError, match="num_workers must be a non-negative integer, got -1"):
        resolve_num_workers(-1)
    monkeypatch.setattr(loader, "can_fork", lambda: False)
    with pytest.warns(RuntimeWarning, match="decoded in this process"):
        assert resolve_num_workers(2) == 0


def test_cli_num_workers_option(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["score", "--images", "x", "--out", "y.jsonl", "--num-workers", "-1"])
    assert exit_info.value.code == 2
    assert "--num-workers: must be a non-negative integer, got '-1'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    assert "--num-workers N" in capsys.readouterr().out


@pytest.mark.parametrize("workers", [0, 2])
def test_the_loader_regroups_single_images_into_the_loops_batches_and_workers_share_each_batch(tmp_path, workers):
    """Workers take images, not batches: the first batch's four images are decoded by both workers
    (each image's fetch leaves a file named by the process that ran it and its niceness), the
    workers run at a lower priority than the models' process, and the images come back in the
    given batches, whatever their order and sizes."""
    prompt = PROMPTS[0]
    decoded_by = tmp_path / "decoded_by"
    decoded_by.mkdir()

    def fetcher(index: int):
        def fetch() -> bytes:
            (decoded_by / f"{index}.{os.getpid()}.{os.nice(0)}").touch()
            return png(random_image(index, (64, 48)))

        return fetch

    work = [Work(ImageItem(prompt.prompt_id, index, fetcher(index)), prompt) for index in range(7)]
    batches = [[3, 0, 5, 1], [2], [6, 4]]
    got = [[entry.index for entry in batch] for batch in loader.batch_loader(work, batches, num_workers=workers)]
    assert got == batches
    decoded = [tuple(int(part) for part in name.split(".")) for name in os.listdir(decoded_by)]
    assert sorted(index for index, _, _ in decoded) == list(range(7))  # each image once
    first_batch = {(pid, niceness) for index, pid, niceness in decoded if index in batches[0]}
    here = os.nice(0)
    if workers == 0:
        assert first_batch == {(os.getpid(), here)}
    else:
        assert len({pid for pid, _ in first_batch} - {os.getpid()}) == 2
        assert {niceness for _, niceness in first_batch} == {min(here + loader.WORKER_NICENESS, 19)}
