"""The fresh draw lets go of its generation model's GPU memory before the scorer runs
(`leaderboard.checks.fresh_draw_run._free_memory`), fast: test_fresh_draw_run.py's draws are slow."""

from __future__ import annotations

import pytest
import torch

from leaderboard.checks.fresh_draw_run import _free_memory


@pytest.mark.parametrize("gpu", [True, False])
def test_the_generation_model_lets_go_of_the_gpus_cache_before_the_scorer_runs(monkeypatch, gpu):
    # one GPU holds one set of models: the generator's cached memory is handed back where there is a GPU
    emptied = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: emptied.append(True))
    _free_memory(object())
    assert emptied == ([True] if gpu else [])
