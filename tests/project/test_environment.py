"""The test environment itself: offline, and no cache of this machine in reach (see conftest.py).

A machine whose Hugging Face cache holds a real model must run the tests as CI does; these checks
fail if a library was imported before conftest.py set the variables, or reads another one.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import SESSION_HOME


def inside_session_home(path: str | Path) -> bool:
    return Path(path).resolve().is_relative_to(SESSION_HOME.resolve())


def test_every_model_and_data_cache_is_the_sessions_own():
    import datasets.config
    import huggingface_hub.constants
    import matplotlib
    from rfdetr.assets.model_weights import get_model_cache_dir

    from leaderboard.store.sqlite_store import negt2i_home

    caches = {
        "huggingface_hub": huggingface_hub.constants.HF_HUB_CACHE,
        "huggingface_hub token": huggingface_hub.constants.HF_TOKEN_PATH,
        "datasets": datasets.config.HF_DATASETS_CACHE,
        "rfdetr": get_model_cache_dir(),
        "negt2ibench home": negt2i_home(),
        "matplotlib": matplotlib.get_configdir(),
    }
    assert {name: inside_session_home(path) for name, path in caches.items()} == dict.fromkeys(caches, True)


def test_offline_and_no_credentials_or_launcher():
    import huggingface_hub.constants

    assert huggingface_hub.constants.HF_HUB_OFFLINE is True
    assert huggingface_hub.get_token() is None
    present = {"HF_TOKEN", "SPACE_ID", "NEGT2I_RESULTS_REPO", "WORLD_SIZE", "RANK", "LOCAL_RANK"} & set(os.environ)
    assert present == set()
