"""Time from `negt2ibench serve` to the first answered request, per stage (run by hand; nothing is asserted).

    .venv/bin/python benchmarks/space_startup.py [--runs 5] [--compare LABEL=DIR ...] [--dataset DIR]

Starts `python -m negt2ibench serve --port P` as a visitor would, `--demo` and `--dataset DIR` (a
folder `negt2ibench build` wrote; built into a temporary folder when not given), RUNS times each,
in a bare environment (offline, HOME and TMPDIR in a temporary folder), and asks the app's /config
every 50 ms from the start until it answers 200. Measured from the process's start: the wall time
to that first answer, the CPU time the process had used by then (user + system, /proc), and the
arrival of each of `serve`'s progress lines on stderr ("serve: loading the prompts …"), so a
stage's time is from its line to the next one (the last stage ends at the first answer).

`--compare LABEL=DIR` measures another checkout the same way in the same run, its starts alternating
with this one's (so both see the same load): e.g. the version before a change, written out with
`git archive COMMIT | tar -x -C DIR`. A checkout whose `serve` prints no progress lines gets totals
only; a start that fails (exit code, or no answer within 10 minutes) is counted as failed.
Prints Markdown tables and the load average (`/proc/loadavg`) before and after.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEADLINE_S = 600.0
STAGE_PREFIX = "serve: "


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a running process (/proc/PID/stat, fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bare_env(home: Path, checkout: Path) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home),
        "PYTHONPATH": str(checkout),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "GRADIO_TEMP_DIR": str(home / "gradio"),
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(home / "hf"),
        "NO_PROXY": "localhost,127.0.0.1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(home / "matplotlib"),
    }


def answered(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "config", timeout=30) as answer:
            return answer.status == 200
    except OSError:
        return False


def one_start(checkout: Path, options: list[str]) -> dict:
    """One `serve` start: {"total": s, "cpu": s, "stages": [(line, seconds after the start)], "failed": why}."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    lines: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="startup_bench_") as folder:
        command = [sys.executable, "-m", "negt2ibench", "serve", "--port", str(port), *options]
        begun = time.monotonic()
        process = subprocess.Popen(
            command, cwd=folder, env=bare_env(Path(folder), checkout), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip

        def read() -> None:
            for line in process.stderr:  # type: ignore[union-attr]
                if line.startswith(STAGE_PREFIX):
                    lines.append((line[len(STAGE_PREFIX) :].strip(), time.monotonic() - begun))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        result: dict = {"stages": lines, "failed": ""}
        while not answered(url):
            if process.poll() is not None or time.monotonic() - begun > DEADLINE_S:
                result["failed"] = f"exit code {process.poll()}" if process.poll() is not None else "no answer"
                break
            time.sleep(0.05)
        else:
            result["total"] = time.monotonic() - begun
            result["cpu"] = cpu_seconds(process.pid)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=10)
    return result


def stage_times(result: dict) -> dict[str, float]:
    """Each stage's seconds: "python, the CLI and its checks" up to the first line, then line to line."""
    marks = [("python, the CLI and its checks", 0.0), *((_stage_name(line), at) for line, at in result["stages"])]
    ends = [at for _, at in marks[1:]] + [result["total"]]
    return {name: end - start for (name, start), end in zip(marks, ends, strict=True) if not name.startswith("serving")}


def _stage_name(line: str) -> str:
    """A progress line without what varies between runs (the port, the folder)."""
    for cut in (" on http", " (", " after"):
        line = line.split(cut)[0]
    return line.rstrip(" …")


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def print_tables(results: dict[tuple[str, str], list[dict]], runs: int) -> None:
    print("| checkout | serve | answered (median, worst), s | CPU by then (median), s | failed |")
    print("|---|---|---:|---:|---:|")
    for (label, mode), starts in results.items():
        done = [r for r in starts if not r["failed"]]
        if not done:
            print(f"| {label} | {mode} | – | – | {len(starts)} of {runs} |")
            continue
        totals = [r["total"] for r in done]
        cpu, failed = statistics.median(r["cpu"] for r in done), len(starts) - len(done)
        print(f"| {label} | {mode} | {statistics.median(totals):.1f}, {max(totals):.1f} | {cpu:.1f} | {failed} |")
    for (label, mode), starts in results.items():
        done = [r for r in starts if not r["failed"] and r["stages"]]
        if not done:
            continue
        print(f"\n{label}, `serve {mode}`: seconds per stage (median of {len(done)}, worst)\n")
        print("| stage | median | worst |\n|---|---:|---:|")
        per_run = [stage_times(r) for r in done]
        for name in per_run[0]:
            values = [times.get(name, float("nan")) for times in per_run]
            print(f"| {name} | {statistics.median(values):.2f} | {max(values):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--compare", action="append", default=[], metavar="LABEL=DIR", help="another checkout, measured alternately"
    )
    parser.add_argument("--dataset", type=Path, default=None, help="a built dataset (default: built here)")
    args = parser.parse_args()
    dataset = args.dataset or Path(tempfile.mkdtemp(prefix="startup_dataset_")) / "negt2ibench"
    if args.dataset is None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        subprocess.run([sys.executable, "-m", "negt2ibench", "build", "--out", str(dataset)], check=True, env=env)
    checkouts = [("this checkout", REPO)]
    checkouts += [(label, Path(folder).resolve()) for label, _, folder in (c.partition("=") for c in args.compare)]
    modes = {"--demo": ["--demo"], "--dataset": ["--dataset", str(dataset)]}
    results: dict[tuple[str, str], list[dict]] = {(label, mode): [] for label, _ in checkouts for mode in modes}
    print(f"load average before: {loadavg()}", flush=True)
    for run in range(args.runs):
        for label, checkout in checkouts:
            for mode, options in modes.items():
                result = one_start(checkout, options)
                results[(label, mode)].append(result)
                shown = result["failed"] or f"{result['total']:.1f} s, CPU {result['cpu']:.1f} s"
                print(f"run {run + 1}, {label}, serve {mode}: {shown} (load {loadavg()})", flush=True)
    print(f"load average after: {loadavg()}\n")
    print_tables(results, args.runs)


if __name__ == "__main__":
    main()
