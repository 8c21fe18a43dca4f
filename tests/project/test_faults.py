"""Fault injection: real `negt2ibench` processes killed with SIGKILL at random moments, rerun,
and the folder compared with what it must hold.

- `build --overwrite` killed at BUILD_KILLS moments (20 by default): after each kill the
  folder is the old build or the new one once recovered, never a mix; the rerun leaves exactly
  the rebuilt prompts beside the untouched `images/` and `results/`, and no `.tmp`/`.new`/`.old`.
- `report` killed at REPORT_KILLS moments over an existing report: the previous report whole or
  the new one, never new tables beside old plots or a truncated PNG; the rerun writes the new one.
- `score` killed at SCORE_KILLS moments: the results file keeps whole records (a torn last line
  at most), the rerun resumes to exactly an uninterrupted run's records; then `report` over them
  exits 0 and names the stray `..._999_0.png`.

The moments are seeded. Every other kill of `build` and `report` comes at a state of the run: its
staging folder holding a random number of the entries it will hold, at least two short, so the
kill lands inside the run however loaded the machine is (the test asserts each one did). The
others are a random delay within a measured run's duration, or the swap itself: those may come
after the run has ended on a busy or an idle machine, and are not counted. `score` is killed once
N result lines are written, plus a short random delay. Set NEGT2I_FAULT_{BUILD,REPORT,SCORE}_KILLS
to run more or fewer.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from dataset_builder.corpus import build_corpus
from dataset_builder.hub import write_dataset_folder
from dataset_builder.loading import load_prompts
from evaluator.config import PRESETS
from evaluator.pipeline import score_images
from evaluator.report import build_report, read_report_inputs, report_tables, write_report
from evaluator.resultio import read_results
from generation.registry import table3_models
from generation.shards import ImageRecord, ShardWriter
from negt2ibench.core.atomic import recover_folder
from tests.helpers.perception_helpers import replace_model_perception
from tests.helpers.space_helpers import RectanglePerception, scene_png, write_results

pytestmark = pytest.mark.slow

BUILD_KILLS = int(os.environ.get("NEGT2I_FAULT_BUILD_KILLS", "20"))
REPORT_KILLS = int(os.environ.get("NEGT2I_FAULT_REPORT_KILLS", "4"))
SCORE_KILLS = int(os.environ.get("NEGT2I_FAULT_SCORE_KILLS", "3"))
SEED = 10
REPO = Path(__file__).resolve().parents[2]
RUN_TIMEOUT_S = 180  # one run takes seconds; a hang must fail, not stall the suite


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        PYTHONPATH=str(REPO),
    )
    return env


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "negt2ibench", *args]


def rerun(command: list[str]) -> str:
    """Run the same `negt2ibench` command again to the end, in this process (`main` is what the
    console script calls; no interpreter start-up to pay): its stdout, or a failure showing it."""
    from negt2ibench.cli import main

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        code = main(command[3:])
    assert code == 0, f"{' '.join(command[3:5])} ... exited {code}:\n{printed.getvalue()[-3000:]}"
    return printed.getvalue()


def run(command: list[str]) -> str:
    """Run to the end; its output, or a failure that shows it."""
    done = subprocess.run(command, cwd=REPO, env=environment(), capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command[2:6])} ... exited {done.returncode}:\n{output[-3000:]}"
    return output


def timed_run(command: list[str]) -> float:
    started = time.monotonic()
    run(command)
    return time.monotonic() - started


def kill_when(command: list[str], ready: Callable[[], bool], extra_delay: float, *, poll: float = 0.002) -> bool:
    """Start COMMAND, wait until `ready()` holds (polled every `poll` seconds; 0: as fast as this
    process can), wait `extra_delay` seconds more, then SIGKILL it. True when it was killed,
    False when it had finished first."""
    process = subprocess.Popen(
        command, cwd=REPO, env=environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + RUN_TIMEOUT_S
    try:
        while not ready() and process.poll() is None:
            assert time.monotonic() < deadline, f"{command[2:4]} never reached the kill point"
            if poll:
                time.sleep(poll)
        if extra_delay > 0:
            try:
                process.wait(timeout=extra_delay)
            except subprocess.TimeoutExpired:
                pass
        killed = process.poll() is None
        if killed:
            os.kill(process.pid, signal.SIGKILL)
        return killed
    finally:
        process.wait(timeout=RUN_TIMEOUT_S)


def after(seconds: float) -> Callable[[], bool]:
    started = time.monotonic()
    return lambda: time.monotonic() - started >= seconds


def appears(parent: Path, prefix: str) -> Callable[[], bool]:
    """True once an entry named PREFIX* exists in PARENT (a staging folder, say)."""
    return lambda: any(entry.name.startswith(prefix) for entry in parent.iterdir())


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under FOLDER by relative path (hidden ones too), with its bytes."""
    return {
        path.relative_to(folder).as_posix(): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()
    }


def holds(parent: Path, name: str, entries: int) -> Callable[[], bool]:
    """True once the staging folder `.NAME.tmp-*` in PARENT exists and holds ENTRIES entries or more."""

    def ready() -> bool:
        for entry in parent.iterdir():
            if entry.name.startswith(f".{name}.tmp-"):
                try:
                    return sum(1 for _ in entry.iterdir()) >= entries
                except FileNotFoundError:  # renamed away between the two looks: the swap has begun
                    return True
        return False

    return ready


def kill_moment(
    rng: random.Random, point: int, duration: float, parent: Path, name: str, written: int
) -> tuple[Callable, float, float, bool]:
    """(ready, extra delay, poll interval, in_run) of one kill moment of a run writing folder NAME in
    PARENT, whose staging folder ends up with WRITTEN entries.

    Even points (`in_run`) are a state of the run: the staging folder holding a random number of
    entries, at least two fewer than it will hold, so at least one whole entry and the swap are
    still to come when the kill lands. Odd points are a random delay within a run's duration, or
    the swap itself: the instant a committed `.NAME.new-*` or a moved-away `.NAME.old-*` shows up
    (polled as fast as possible)."""
    if point % 2 == 0:
        return holds(parent, name, rng.randint(0, max(0, written - 2))), 0.0, 0.002, True
    if rng.random() < 0.5:
        return after(rng.uniform(0.0, duration)), 0.0, 0.002, False
    staged, committed, moved = (appears(parent, f".{name}.{stage}-") for stage in ("tmp", "new", "old"))
    spinning = [False]

    def swapping() -> bool:  # sleep until the staging folder exists, then spin: the swap takes microseconds
        if committed() or moved():
            return True
        if not spinning[0]:
            spinning[0] = staged()
            time.sleep(0.002)
        return False

    return swapping, 0.0, 0.0, False


# ------------------------------------------------------------------------ build --overwrite


def add_generated_files(dataset: Path) -> None:
    """What `--overwrite` must keep: an image split (a real shard) and a results file."""
    writer = ShardWriter(dataset, "tiny", rank=0, shard_size=2)
    for sample in range(3):
        writer.add(ImageRecord("color_pos1_neg0_000", sample, sample, b"\x89PNG not decoded", "lab/tiny", "tiny", "{}"))
    writer.flush()
    (dataset / "results").mkdir()
    (dataset / "results" / "tiny.jsonl").write_text('{"kept": "as is"}\n')


def test_build_overwrite_killed_at_random_moments_keeps_images_and_results(tmp_path):
    home = tmp_path / "work"
    dataset = home / "ds"
    duration = timed_run(cli("build", "--out", str(dataset)))
    add_generated_files(dataset)
    generated = {path: data for path, data in snapshot(dataset).items() if path.split("/")[0] in ("images", "results")}
    expected = {}  # seed → the folder an uninterrupted `build --overwrite --seed S` leaves
    for seed in (1, 2):
        reference = tmp_path / f"reference_{seed}" / "ds"
        shutil.copytree(dataset, reference)
        write_dataset_folder(build_corpus(seed), reference, overwrite=True)
        expected[seed] = snapshot(reference)
    assert expected[1] != expected[2] and all(expected[s][k] == v for s in (1, 2) for k, v in generated.items())
    write_dataset_folder(build_corpus(1), dataset, overwrite=True)
    assert snapshot(dataset) == expected[1]

    written = len({path.split("/")[0] for path in expected[1]} - {"images", "results"})  # what a build writes
    rng = random.Random(SEED)
    in_run = missed = 0
    for point in range(BUILD_KILLS):
        old, new = (1, 2) if point % 2 == 0 else (2, 1)
        command = cli("build", "--out", str(dataset), "--overwrite", "--seed", str(new))
        ready, extra, poll, inside = kill_moment(rng, point, duration, home, "ds", written)
        killed = kill_when(command, ready, extra, poll=poll)
        in_run += inside
        missed += inside and not killed
        recover_folder(dataset)  # what the next command does first
        assert snapshot(dataset) in (expected[old], expected[new]), f"kill point {point}: a mixed folder"
        rerun(command)
        assert snapshot(dataset) == expected[new], f"kill point {point}: the rerun did not rebuild it"
        assert [entry.name for entry in home.iterdir()] == ["ds"], f"kill point {point}: leftovers"
    assert in_run >= BUILD_KILLS // 2 and missed == 0, f"{missed} of {in_run} kills at a state of the run missed it"


# ------------------------------------------------------------------------ report


def test_report_killed_at_random_moments_leaves_a_whole_report(tmp_path):
    prompts = load_prompts(None)[:600]
    inputs = {
        "a": write_results(tmp_path / "a.jsonl", prompts, "model_a", passed=False),
        "b": write_results(tmp_path / "b.jsonl", prompts, "model_b", passed=lambda p, s: s % 2 == 0),
    }
    options = ["--bootstrap", "50", "--seed", "0"]
    expected = {}
    for name, path in inputs.items():  # what an uninterrupted run writes, made in this process
        read = read_report_inputs([str(path)])
        report = build_report(read.records, n_resamples=50, seed=0, inputs=read.to_dict())
        write_report(report, tmp_path / f"reference_{name}", report_tables(report, table3_models()))  # as `report` does
        expected[name] = snapshot(tmp_path / f"reference_{name}") | {"notes.txt": b"mine"}
    home = tmp_path / "reports"
    out = home / "report"
    out.mkdir(parents=True)
    (out / "notes.txt").write_bytes(b"mine")  # not a report file: every run keeps it
    duration = timed_run(cli("report", str(inputs["a"]), "--out", str(out), *options))
    assert snapshot(out) == expected["a"]

    written = len({path.split("/")[0] for path in expected["a"]} - {"notes.txt"})  # what a report writes
    rng = random.Random(SEED)
    in_run = missed = 0
    for point in range(REPORT_KILLS):
        old, new = ("a", "b") if point % 2 == 0 else ("b", "a")
        command = cli("report", str(inputs[new]), "--out", str(out), *options)
        ready, extra, poll, inside = kill_moment(rng, point, duration, home, "report", written)
        killed = kill_when(command, ready, extra, poll=poll)
        in_run += inside
        missed += inside and not killed
        recover_folder(out)
        assert snapshot(out) in (expected[old], expected[new]), f"kill point {point}: a mixed or torn report"
        rerun(command)
        assert snapshot(out) == expected[new], f"kill point {point}: the rerun did not write the new report"
        assert [entry.name for entry in home.iterdir()] == ["report"], f"kill point {point}: leftovers"
    assert in_run >= REPORT_KILLS // 2 and missed == 0, f"{missed} of {in_run} kills at a state of the run missed it"


# ------------------------------------------------------------------------ score, then report

SCORE_SCRIPT = '''
"""`negt2ibench` with the evaluator's models replaced by a slow rectangle double (test only)."""
import sys
import time

import evaluator.models.weights as weights
import evaluator.perception as perception_module
from tests.helpers.space_helpers import RectanglePerception


class SlowRectangles(RectanglePerception):
    def observe(self, images, prompts):
        time.sleep(0.05 * len(images))
        return super().observe(images, prompts)


perception_module.ModelPerception = lambda config, **kwargs: SlowRectangles()
weights.missing_weights = lambda *args, **kwargs: []  # the rectangles stand in for the weights
from negt2ibench.cli import main  # noqa: E402

sys.exit(main(sys.argv[1:]))
'''


def verdicts(path: Path) -> dict:
    """What each record decides, by key (raw scores aside)."""
    return {
        record.key: (
            record.passed,
            record.error,
            tuple((s.index, s.satisfied, s.cause, s.dead_zone_pass) for s in record.statements),
            tuple((o.name, o.present) for o in record.objects),
        )
        for record in read_results(path)
    }


def line_count(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def test_score_killed_at_random_moments_resumes_and_report_names_the_stray(tmp_path, monkeypatch):

    prompts = load_prompts(None)[::480][:10]  # one prompt of each category and setting mix
    folder = tmp_path / "images"
    folder.mkdir()
    for prompt in prompts:
        scene_png(folder / f"{prompt.prompt_id}_0.png", size=(96, 64))
    scene_png(folder / "color_pos0_neg1_999_0.png", size=(96, 64))  # no such prompt: an error row
    (folder / "notes.txt").write_text("not an image")
    reference = tmp_path / "reference.jsonl"
    score_images(
        folder,
        load_prompts(None),
        RectanglePerception(),
        out_path=reference,
        config=PRESETS["current"],
        model_key="toy",
        batch_size=1,
        progress=False,
    )
    total = len(verdicts(reference))
    assert total == len(prompts) + 1

    script = tmp_path / "score_slowly.py"
    script.write_text(SCORE_SCRIPT)
    out = tmp_path / "results" / "toy.jsonl"
    command = [sys.executable, str(script), "score", "--images", str(folder), "--out", str(out)]
    command += ["--model-key", "toy", "--batch-size", "1", "--device", "cpu", "--no-progress"]
    rng = random.Random(SEED)
    for point in range(SCORE_KILLS):
        if point == 0:
            ready, extra = after(rng.uniform(0.5, 4.0)), 0.0  # while it starts up, most likely
        else:  # once a random number of new records is written, plus a little
            lines = line_count(out) + rng.randint(1, max(1, (total - line_count(out)) // 2))
            ready, extra = (lambda n=lines: line_count(out) >= n), rng.uniform(0.0, 0.05)
        kill_when(command, ready, extra)
        kept = read_results(out, strict=False) if out.exists() else []  # whole records; a torn last line at most
        assert len({record.key for record in kept}) == len(kept), f"kill point {point}: a key written twice"
    replace_model_perception(monkeypatch, lambda config, **kwargs: RectanglePerception())
    printed = rerun([sys.executable, "-m", "negt2ibench", *command[2:]])  # the script's models, in this process
    assert "skipped 1 file(s) not named" in printed and "notes.txt" in printed
    assert verdicts(out) == verdicts(reference)  # resumed to exactly an uninterrupted run's records
    assert len(out.read_bytes().splitlines()) == total  # no duplicate, no torn line left

    report = run(cli("report", str(out), "--out", str(tmp_path / "report"), "--bootstrap", "0"))  # exits 0
    stray = next(line for line in report.splitlines() if "color_pos0_neg1_999" in line)
    assert f"{out}:" in stray and "not a benchmark image" in stray and "prompt number 999 is outside 000–099" in stray
    assert (tmp_path / "report" / "report.md").is_file()
