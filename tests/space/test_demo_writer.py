"""The demo's files are written beside gradio's import (`space.demo.start_demo`): in a forked
process on Linux, here and now elsewhere; either way the app gets the same demo, and a writer that
dies says so in one line instead of hanging or serving a half-written store."""

from __future__ import annotations

import os
import sys

import pytest

from dataset_builder.loading import load_prompts
from negt2ibench.core.errors import UserError
from space import demo
from space.demo import PENDING_NAME, VERIFIED_NAME, DemoNotWritten, start_demo


def _entries(setup: demo.DemoSetup) -> list[tuple[str, str]]:
    return sorted((entry.model_name, entry.status) for entry in setup.store.list_entries())


def _dies(folder: str) -> None:  # a writer killed mid-way (the OOM killer, a kill -9)
    os._exit(9)


@pytest.mark.skipif(sys.platform != "linux", reason="the writer is forked on Linux only")
def test_the_forked_writer_hands_the_app_the_demo_written_here(tmp_path):
    beside = start_demo(tmp_path / "beside")()
    here = demo.demo_setup(tmp_path / "here")

    assert _entries(beside) == _entries(here) == sorted([(VERIFIED_NAME, "verified"), (PENDING_NAME, "pending")])
    assert beside.prompts == here.prompts == load_prompts(None)
    assert beside.score_example.prompt_id == here.score_example.prompt_id
    assert beside.score_example.summary == here.score_example.summary
    assert beside.score_example.table.equals(here.score_example.table)
    assert beside.score_example.drawn.tobytes() == here.score_example.drawn.tobytes()
    assert os.path.isfile(beside.score_example.image)
    assert (tmp_path / "beside" / "examples" / "sample.jsonl").is_file()


@pytest.mark.skipif(sys.platform != "linux", reason="the writer is forked on Linux only")
def test_a_writer_that_dies_gives_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "write_demo", _dies)
    opened = start_demo(tmp_path)

    with pytest.raises(DemoNotWritten, match="the demo's writer stopped before it finished") as raised:
        opened()
    assert isinstance(raised.value, UserError)  # the CLI prints it in one line, exit 1


def test_where_it_does_not_fork_the_demo_is_written_before_the_call_returns(tmp_path, monkeypatch):
    monkeypatch.setattr(demo, "WRITES_BESIDE", False)
    monkeypatch.setattr(demo, "write_demo", _refused_if_forked(demo.write_demo))

    opened = start_demo(tmp_path)

    assert (tmp_path / demo.STORE_FILE).is_file()  # written already, in this process
    assert _entries(opened()) == sorted([(VERIFIED_NAME, "verified"), (PENDING_NAME, "pending")])


def _refused_if_forked(write):
    parent = os.getpid()

    def written_here(folder):
        assert os.getpid() == parent, "written in another process"
        return write(folder)

    return written_here
