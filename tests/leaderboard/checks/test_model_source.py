"""Whether the model an entry's images name is public, and at which commit (`leaderboard.checks.model_source`),
through a double of `HfApi.model_info` that raises huggingface_hub's own errors: a public repo at its
recorded commit, a recorded commit the Hub does not have (the default branch, said), a private or missing
repo (not public), a gated one (public, loaded with the job's token), the Hub unreachable (the check
waits), and offline, this machine's Hugging Face cache."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from leaderboard.checks.model_source import ModelNotPublic, ModelUnreachable, hub_model
from tests.helpers.hub_helpers import http_error
from tests.helpers.regen_helpers import COMMIT_A, COMMIT_B

MAIN = "f" * 40


def hub_error(kind: str):
    """huggingface_hub's error of KIND, with a response as the library builds it."""
    from huggingface_hub import errors

    base = http_error(404 if kind != "gated" else 403, kind)
    cls = {
        "missing": errors.RepositoryNotFoundError,
        "revision": errors.RevisionNotFoundError,
        "gated": errors.GatedRepoError,
    }[kind]
    return cls(kind, response=base.response)


class ModelApi:
    """`HfApi.model_info` of one public repo at MAIN (and COMMIT_A), its weights two safetensors files."""

    def __init__(self, *, gated: bool = False, fail: str = ""):
        self.gated, self.fail, self.calls = gated, fail, []

    def model_info(self, repo_id, revision=None, files_metadata=False):
        self.calls.append((repo_id, revision, files_metadata))
        if self.fail == "network":
            raise ConnectionError("unreachable")
        if self.fail:
            raise hub_error(self.fail)
        if repo_id != "lab/t2i":
            raise hub_error("missing")
        if revision not in (None, COMMIT_A):
            raise hub_error("revision")
        siblings = [SimpleNamespace(rfilename=f"unet/{n}.safetensors", size=3 * 10**9) for n in ("a", "b")]
        siblings.append(SimpleNamespace(rfilename="README.md", size=10**3))
        return SimpleNamespace(sha=revision or MAIN, gated="auto" if self.gated else False, siblings=siblings)


def test_a_public_repo_is_its_recorded_commit_with_its_weights_size():
    api = ModelApi()
    found = hub_model("lab/t2i", COMMIT_A, api=api)
    assert (found.commit, found.gated, found.weight_bytes, found.note) == (COMMIT_A, False, 6 * 10**9, "")
    assert api.calls == [("lab/t2i", COMMIT_A, True)]


def test_a_recorded_commit_the_hub_does_not_have_does_not_opt_out():
    found = hub_model("lab/t2i", COMMIT_B, api=ModelApi())
    assert found.commit == MAIN
    assert found.note == f"its recorded commit {COMMIT_B[:12]} is not on the Hub: regenerated from the default branch"
    assert (
        hub_model("lab/t2i", None, api=ModelApi()).note == "no commit recorded: regenerated from the default branch's"
    )


def test_a_private_or_missing_repo_is_not_public_and_a_gated_one_is():
    with pytest.raises(ModelNotPublic, match="lab/other is not a public model on the Hub"):
        hub_model("lab/other", COMMIT_A, api=ModelApi())
    with pytest.raises(ModelNotPublic, match=r"HTTP 401"):
        hub_model(
            "lab/t2i", COMMIT_A, api=SimpleNamespace(model_info=lambda *a, **k: (_ for _ in ()).throw(http_error(401)))
        )
    assert hub_model("lab/t2i", COMMIT_A, api=ModelApi(gated=True)).gated


def test_an_unreachable_hub_leaves_the_question_for_later():
    with pytest.raises(ModelUnreachable, match="the Hub could not be asked about lab/t2i"):
        hub_model("lab/t2i", COMMIT_A, api=ModelApi(fail="network"))


@pytest.mark.slow
def test_offline_this_machines_cache_answers():
    from tests.helpers.regen_helpers import put_tiny_model

    cache = Path(os.environ["HF_HUB_CACHE"])
    put_tiny_model(cache, "test-source/tiny", commit=COMMIT_A)
    assert hub_model("test-source/tiny", COMMIT_A).commit == COMMIT_A  # the tests run offline
    fallback = hub_model("test-source/tiny", COMMIT_B)  # not cached: the cached main
    assert fallback.commit == COMMIT_A and fallback.note == "resolved from this machine's cache (offline)"
    with pytest.raises(ModelUnreachable, match="not in this machine's cache and the Hub is offline here"):
        hub_model("test-source/absent", None)
