"""Which process this is, what share of the work it does, and on which device and dtype.

One owner for `generate` and `score` (and anything else that runs under `accelerate launch` /
`torchrun`): accelerate's `PartialState` underneath, with one rule for CPU machines.

- `Launch.detect()`: this process's rank in the launcher's world (a world of 1 without one).
  Without CUDA, accelerate ignores torchrun's WORLD_SIZE unless it is asked for a CPU (gloo)
  group, and every process would do all the work; so without CUDA and with WORLD_SIZE > 1 (or
  when the caller runs on the CPU) it asks for one. A launcher world that accelerate still does
  not see is refused.
- `Launch.share(items)`: this process's contiguous share (the chunks of accelerate's
  `split_between_processes`); `barrier()`; `on_main(merge)` runs a merge step on the main
  process once every process has finished its share.
- `select_device("auto")`: cuda (this process's own GPU under a launcher), then mps, then cpu.
- `select_dtype(device)`: bfloat16 on a CUDA GPU, float32 on the CPU (half precision there is slow
  or unsupported) and on MPS, unless the caller prefers another dtype for accelerators.

torch and accelerate are imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .errors import UserError
from .options import device as device_option

if TYPE_CHECKING:
    import torch

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["Launch", "contiguous_share", "local_world_size", "select_device", "select_dtype"]


def contiguous_share(items: Sequence[T], rank: int, world_size: int) -> list[T]:
    """Contiguous chunk of one rank, the same chunks as accelerate's `split_between_processes`.

    The first `len(items) % world_size` ranks take one item more; together the chunks are the
    items in order, each exactly once.
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} outside world of {world_size}")
    per_rank, extras = divmod(len(items), world_size)
    start = rank * per_rank + min(rank, extras)
    end = start + per_rank + (1 if rank < extras else 0)
    return list(items[start:end])


def launched_world_size() -> int:
    """The number of processes the launcher says it started (WORLD_SIZE; 1 without a launcher)."""
    return int(os.environ.get("WORLD_SIZE", "1") or 1)


def local_world_size() -> int:
    """The number of processes the launcher started on this machine (LOCAL_WORLD_SIZE, which torchrun
    and accelerate set; 1 without a launcher): they share its CPUs, e.g. for data-loading workers."""
    return max(int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1), 1)


@dataclass(frozen=True)
class Launch:
    """This process in its launcher's world. `Launch()` is a lone process; `Launch(rank, world)`
    simulates one rank of a larger world (tests), with no barrier to wait on."""

    rank: int = 0
    world_size: int = 1
    state: Any = None  # accelerate's PartialState when detected

    @classmethod
    def detect(cls, *, cpu: bool = False) -> Launch:
        """This process under `accelerate launch` / torchrun (alone: rank 0 of 1).

        `cpu=True` asks for a CPU (gloo) group even when CUDA is here (the work runs on the CPU).
        """
        import torch
        from accelerate import PartialState

        launched = launched_world_size()
        cpu_group = cpu or (launched > 1 and not torch.cuda.is_available())
        state = PartialState(cpu=True) if cpu_group else PartialState()
        if launched > 1 and state.num_processes != launched:
            raise UserError(
                f"launched as {launched} processes but accelerate sees {state.num_processes}: every process "
                f"would do the same work. Use `accelerate launch` with a matching config"
            )
        return cls(rank=state.process_index, world_size=state.num_processes, state=state)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def is_local_main(self) -> bool:
        """The first process on this machine (the one that shows a progress bar)."""
        return self.state.is_local_main_process if self.state is not None else self.is_main

    def share(self, items: Sequence[T]) -> list[T]:
        """This process's contiguous share of ITEMS."""
        return contiguous_share(items, self.rank, self.world_size)

    def barrier(self) -> None:
        """Wait until every process gets here (nothing to wait for alone or when simulated)."""
        if self.state is not None and self.world_size > 1:
            self.state.wait_for_everyone()

    def on_main(self, merge: Callable[[], R]) -> R | None:
        """Run MERGE on the main process once all processes are here; the others wait until it is done.

        Returns MERGE's result on the main process, None on the others.
        """
        self.barrier()
        result = merge() if self.is_main else None
        self.barrier()
        return result

    def device(self, requested: str = "auto"):
        """`select_device(requested, self)`: this process's device."""
        return select_device(requested, self)


def _own_gpu(launch: Launch | None):
    """The CUDA device of this process under a launcher (None alone or without CUDA)."""
    import torch

    if launch is not None and launch.state is not None and launch.state.device.type == "cuda":
        return launch.state.device
    if "LOCAL_RANK" in os.environ:
        return torch.device("cuda", int(os.environ["LOCAL_RANK"]) % torch.cuda.device_count())
    return None


def select_device(requested: str = "auto", launch: Launch | None = None) -> torch.device:
    """The `torch.device` to run on: `auto` picks cuda, then mps, then cpu.

    Under a launcher, `auto` and `cuda` mean this process's own GPU, not GPU 0 for all. An
    explicit device that is not here is a `UserError`; a name that is no device a `UsageError`.
    """
    import torch

    requested = device_option(requested or "auto")
    if requested in ("auto", "cuda") and torch.cuda.is_available():
        return _own_gpu(launch) or torch.device("cuda")
    if requested == "auto":
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {requested} was asked for but no CUDA GPU is visible (try --device auto)")
    if requested == "mps" and not torch.backends.mps.is_available():
        raise UserError("--device mps was asked for but MPS is not available (try --device auto)")
    return torch.device(requested)


def check_device(requested: str = "auto") -> str:
    """Check a device option now, importing torch only to look for a GPU that was asked for by name
    (`cuda`, `cuda:N`, `mps`): `auto` and `cpu` are always there. The option back, normalised; a name
    that is no device is a `UsageError`, a device that is not here a `UserError`."""
    requested = device_option(requested or "auto")
    if requested not in ("auto", "cpu"):
        select_device(requested)
    return requested


def select_dtype(device: torch.device | str, preferred: Any = None) -> torch.dtype:
    """The dtype to run models in on DEVICE.

    CPU: float32 always (half precision there is slow or unsupported). Elsewhere: PREFERRED (a
    `torch.dtype` or its name, e.g. a model's own "float16") when given, else bfloat16 on CUDA
    (half the memory, twice the throughput) and float32 on MPS.
    """
    import torch

    kind = torch.device(device).type
    if kind == "cpu":
        return torch.float32
    if preferred is not None:
        return getattr(torch, preferred) if isinstance(preferred, str) else preferred
    return torch.bfloat16 if kind == "cuda" else torch.float32
