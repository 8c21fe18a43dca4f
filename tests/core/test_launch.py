"""`negt2ibench.core.launch` and `negt2ibench.core.options`: one owner of ranks, devices, dtypes and option checks."""

from __future__ import annotations

import argparse

import pytest
import torch

from negt2ibench.core.errors import OptionError, UsageError, UserError
from negt2ibench.core.launch import Launch, contiguous_share, select_device, select_dtype
from negt2ibench.core.options import check, device, non_negative_int, positive_int, repo_id, split_name


def test_contiguous_shares_are_accelerates_chunks():
    items = list(range(11))
    assert [contiguous_share(items, rank, 3) for rank in range(3)] == [
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 10],
    ]
    assert [contiguous_share(items[:2], rank, 4) for rank in range(4)] == [[0], [1], [], []]
    with pytest.raises(ValueError, match="rank 3 outside world of 3"):
        contiguous_share(items, 3, 3)


def test_on_main_runs_the_merge_once_on_the_main_process():
    merged = []

    def merge(who: str) -> str:
        merged.append(who)
        return f"report of {who}"

    assert Launch(0, 2).on_main(lambda: merge("rank 0")) == "report of rank 0"
    assert Launch(1, 2).on_main(lambda: merge("rank 1")) is None
    assert merged == ["rank 0"]
    alone = Launch.detect()
    assert (alone.rank, alone.world_size, alone.is_main, alone.is_local_main) == (0, 1, True, True)
    assert alone.share("abc") == ["a", "b", "c"]


def test_device_and_dtype_choice():
    assert select_device("cpu") == torch.device("cpu")
    expected = "cuda" if torch.cuda.is_available() else "mps" if torch.backends.mps.is_available() else "cpu"
    assert select_device("auto").type == expected
    with pytest.raises(UsageError, match="unknown device 'tpu'"):
        select_device("tpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="--device cuda:1 was asked for but no CUDA GPU is visible"):
            select_device("cuda:1")
    assert select_dtype("cpu") == torch.float32
    assert select_dtype("cpu", preferred="float16") == torch.float32  # half precision on CPU: never
    assert select_dtype(torch.device("cuda", 0)) == torch.bfloat16
    assert select_dtype("cuda:0", preferred="float16") == torch.float16
    assert select_dtype("mps") == torch.float32


@pytest.mark.parametrize(
    ("validator", "good", "parsed", "bad", "message"),
    [
        (positive_int, "8", 8, "0", "must be a positive integer, got '0'"),
        (positive_int, 3, 3, "eight", "must be a positive integer, got 'eight'"),
        (non_negative_int, "0", 0, "-1", "must be a non-negative integer, got '-1'"),
        (device, "cuda:1", "cuda:1", "gpu", "unknown device 'gpu'"),
        (split_name, "sd_1_5", "sd_1_5", "SD", "'SD' is not a valid split name"),
        (repo_id, "org/name", "org/name", "name", "must look like ORG/NAME, got 'name'"),
    ],
)
def test_option_validators(validator, good, parsed, bad, message):
    assert validator(good) == parsed
    with pytest.raises(OptionError, match=message):
        validator(bad)


def test_one_validator_serves_argparse_and_python_callers(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--batch-size", type=positive_int)
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(["--batch-size", "0"])
    assert exited.value.code == 2
    assert "argument --batch-size: must be a positive integer, got '0'" in capsys.readouterr().err
    with pytest.raises(UsageError, match="^batch_size must be a positive integer, got 0$") as caught:
        check("batch_size", 0, positive_int)
    assert caught.value.exit_code == 2
    with pytest.raises(OptionError):
        positive_int(True)  # a bool is not a count
