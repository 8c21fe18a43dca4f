"""Whether the model an entry's images name is public on the Hub, and at which commit (issue 51).

Whether an entry is reproducible is decided by the job from the model's id, never from what the
submitter recorded (`generation.reproduce.regeneration_spec`): the regeneration check resolves the
repo the records name to a commit, here, and only a repo that is not public gets the mark *images
not reproduced* without a regeneration, its reason saying which:

- **public**: `HfApi(token=False).model_info` answers (no token: what anyone can read, never what the
  Space's own token may see). The commit is the recorded one when the Hub has it, else the repo's
  default branch now (the reason says so: a recorded commit that is not on the Hub does not opt out);
  a gated repo is public, marked `gated`, and loaded with the job's token;
- **not public** (`ModelNotPublic`): the Hub has no such repo, or it is private;
- **not asked** (`ModelUnreachable`): the Hub could not be reached; the check waits and tries again.

Offline (HF_HUB_OFFLINE, a maintainer's machine or the tests) the answer is this machine's Hugging
Face cache: a snapshot of the recorded commit, else of the cached default branch; a repo not in the
cache cannot be decided offline (`ModelUnreachable`).

`ModelResolver` is what the verification job is given (`hub_model`, or a test's double).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from negt2ibench.core.errors import UserError


class ModelNotPublic(UserError):
    """The repo is not on the Hub for everyone: it does not exist, or it is private."""


class ModelUnreachable(UserError):
    """The Hub could not be asked now (offline without the model cached, a network error, an outage)."""


@dataclass(frozen=True)
class ResolvedModel:
    """A public model repo at a commit."""

    commit: str
    gated: bool = False
    weight_bytes: int | None = None  # the weights' bytes at that commit (safetensors), when the Hub says
    note: str = ""  # what the entry's reason says of the resolution ("" when the recorded commit was used)


# (repo id, the recorded commit or None) -> the public repo at a commit; ModelNotPublic or ModelUnreachable.
ModelResolver = Callable[[str, "str | None"], ResolvedModel]


def _hub_error(error: BaseException, repo_id: str) -> UserError | None:
    """Our exception for a Hub library error, or None for one that means "this revision only"."""
    from huggingface_hub import errors as hub_errors

    if isinstance(error, hub_errors.RevisionNotFoundError):
        return None
    if isinstance(error, hub_errors.GatedRepoError):
        return ModelUnreachable(f"{repo_id} is gated and its metadata could not be read")
    if isinstance(error, hub_errors.RepositoryNotFoundError):
        return ModelNotPublic(f"{repo_id} is not a public model on the Hub (it does not exist, or it is private)")
    status = getattr(getattr(error, "response", None), "status_code", None)
    if status in (401, 403, 404):
        return ModelNotPublic(f"{repo_id} is not a public model on the Hub (HTTP {status})")
    return ModelUnreachable(f"the Hub could not be asked about {repo_id} ({type(error).__name__})")


def _cached(repo_id: str, commit: str | None) -> ResolvedModel:
    """The repo as this machine's Hugging Face cache holds it (offline)."""
    from huggingface_hub import snapshot_download

    for revision in ([commit] if commit else []) + [None]:
        try:
            folder = snapshot_download(repo_id, revision=revision, local_files_only=True)
        except Exception:  # noqa: BLE001 - not in the cache at that revision
            continue
        note = "" if revision == commit else "resolved from this machine's cache (offline)"
        return ResolvedModel(Path(folder).name, note=note)
    raise ModelUnreachable(f"{repo_id} is not in this machine's cache and the Hub is offline here")


def hub_model(repo_id: str, commit: str | None, api: Any = None) -> ResolvedModel:
    """REPO_ID as the Hub shows it to anyone: at COMMIT when the Hub has it, else its default branch.

    Args:
        repo_id: the model's Hub repo id, as the images record it.
        commit: the commit the images record (None: none recorded).
        api: an `HfApi` (default: one with no token); offline, this machine's cache answers.

    Returns:
        The commit to regenerate from, whether the repo is gated, the weights' bytes, and a note when
        the commit is not the recorded one.

    Raises:
        ModelNotPublic: no such public repo.
        ModelUnreachable: the Hub could not be asked (or, offline, the cache does not hold it).
    """
    from huggingface_hub import constants

    if api is None and constants.HF_HUB_OFFLINE:
        return _cached(repo_id, commit)
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=False)
    for revision in ([commit] if commit else []) + [None]:
        try:
            info = api.model_info(repo_id, revision=revision, files_metadata=True)
        except Exception as error:  # noqa: BLE001 - the Hub's errors, in our words
            ours = _hub_error(error, repo_id)
            if ours is not None:
                raise ours from None
            continue  # the recorded commit is not on the Hub: the default branch
        sizes = [getattr(s, "size", None) or 0 for s in info.siblings or [] if s.rfilename.endswith(".safetensors")]
        if commit is None:
            note = "no commit recorded: regenerated from the default branch's"
        elif revision != commit:
            note = f"its recorded commit {commit[:12]} is not on the Hub: regenerated from the default branch"
        else:
            note = ""
        return ResolvedModel(str(info.sha), bool(info.gated), sum(sizes) or None, note)
    raise ModelNotPublic(f"{repo_id} has no default branch on the Hub")
