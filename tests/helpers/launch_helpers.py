"""Multi-process runs in tests: a stand-in for accelerate's PartialState, so that the ranks of a
two-process run can run in turn in one test process, and real `torchrun` launches of the CLI on
loopback."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from tests.helpers.net import free_port


class FakeState:
    """One rank of a two-process run (ranks run in turn here)."""

    def __init__(self, rank: int):
        self.process_index, self.num_processes = rank, 2
        self.is_main_process = self.is_local_main_process = rank == 0

    @contextmanager
    def split_between_processes(self, items):
        half = (len(items) + 1) // 2
        yield items[:half] if self.process_index == 0 else items[half:]

    def wait_for_everyone(self):
        pass


REPO = Path(__file__).resolve().parents[2]  # tests/helpers/ → the repository root
LAUNCH_TIMEOUT_S = 360  # one launch takes ~15-25 s on 2 idle cores, several times that under load; a hang must fail


def process_env() -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_PORT")
    }
    env.update(
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        OMP_NUM_THREADS="1",
        MASTER_ADDR="127.0.0.1",
        PYTHONPATH=str(REPO),
    )
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def run_checked(command: list[str], env: dict[str, str]) -> str:
    """Run COMMAND from the repository root; its combined output, or a failure showing the output's end."""
    completed = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S)
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, f"{' '.join(command[:6])} ... exited {completed.returncode}:\n{output[-4000:]}"
    return output


def torchrun(*args: str, processes: int = 2) -> str:
    """`python -m torch.distributed.run --nproc_per_node N ARGS...` on a free loopback port."""
    env = process_env()
    port = str(free_port())
    env["MASTER_PORT"] = port
    return run_checked(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc_per_node",
            str(processes),
            "--master-addr",
            "127.0.0.1",
            "--master-port",
            port,
            *args,
        ],
        env,
    )
