"""Doubles for verification and Hub jobs (no network, no GPU).

- `JobsHfApi`: the Jobs calls of `huggingface_hub.HfApi` at their boundary, answering with
  huggingface_hub's own `JobInfo` and `Volume`. Every call is recorded with its arguments, the
  secrets by NAME only (their values are kept apart, hashed, so a test can check what was sent
  without ever holding it in a record). A test moves each job through its stages (`set_stage`),
  gives it log lines, or forgets it (the Hub then answers 404: the job vanished).
- `double_jobs`: a `LocalBackend` whose job is `tests.helpers.verify_job_double` (the real command,
  the rectangle perception double as its scorer), for the Space's end-to-end tests.
- `wheel_file`: a wheel of `negt2ibench` VERSION whose METADATA declares REQUIRES (the artifact a
  job ships; only its name and metadata are read).
"""

from __future__ import annotations

import hashlib
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.helpers.hub_helpers import http_error

REPO = Path(__file__).resolve().parents[2]


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class JobsHfApi:
    """`HfApi`'s Jobs methods over an in-memory set of jobs; `calls` records each call."""

    def __init__(self, user: str = "space-owner", repos: Path | None = None):
        self.user, self.repos = user, repos  # repos: the Hub's dataset repos, as folders ROOT/ORG/NAME
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.jobs: dict[str, dict[str, Any]] = {}
        self.sent_secrets: list[dict[str, str]] = []  # per launch: name → SHA-256 of the value
        self.launched = 0

    def called(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for call, kwargs in self.calls if call == name]

    # -- the Hub's side, moved by a test
    def set_stage(self, job_id: str, stage: str, message: str | None = None, logs: Sequence[str] = ()) -> None:
        self.jobs[job_id].update(stage=stage, message=message)
        self.jobs[job_id]["logs"] += list(logs)

    def forget(self, job_id: str) -> None:
        del self.jobs[job_id]

    def script(self, job_id: str, steps: Sequence[tuple[str, Sequence[str]]]) -> None:
        """The stages (with new log lines) the job goes through, one per look at it (`inspect_job`)."""
        self.jobs[job_id]["script"] = list(steps)

    def _info(self, job_id: str):
        from huggingface_hub import JobInfo

        job = self.jobs[job_id]
        return JobInfo(
            id=job_id,
            owner={"id": "u1", "name": job["namespace"], "type": "user"},
            status={"stage": job["stage"], "message": job["message"]},
            flavor=job["flavor"],
            labels=job["labels"],
            endpoint="https://huggingface.co",
        )

    # -- HfApi
    def whoami(self, token: Any = None) -> dict[str, Any]:
        self.calls.append(("whoami", {}))
        return {"name": self.user}

    def sync_job_volume(self, source, mount_path, *, remote_name=None, read_only=True, namespace=None, token=None):
        from huggingface_hub import Volume

        files = sorted(path.name for path in Path(source).iterdir())
        self.calls.append(
            ("sync_job_volume", {"files": files, "mount_path": mount_path, "remote_name": remote_name,
                                 "read_only": read_only, "namespace": namespace})
        )  # fmt: skip
        bucket = f"{namespace}/jobs-artifacts"
        return Volume(type="bucket", source=bucket, mount_path=mount_path, path=remote_name, read_only=read_only)

    def run_uv_job(self, script, *, secrets=None, namespace=None, **kwargs):
        secrets = dict(secrets or {})
        self.sent_secrets.append({name: _digest(str(value)) for name, value in secrets.items()})
        self.calls.append(
            ("run_uv_job", {"script": script, "secrets": sorted(secrets), "namespace": namespace, **kwargs})
        )
        self.launched += 1
        job_id = f"job{self.launched:04d}"
        self.jobs[job_id] = {
            "stage": "SCHEDULING",
            "message": None,
            "logs": [],
            "namespace": namespace or self.user,
            "flavor": kwargs.get("flavor"),
            "labels": kwargs.get("labels"),
        }
        return self._info(job_id)

    def inspect_job(self, *, job_id, namespace=None, token=None):
        self.calls.append(("inspect_job", {"job_id": job_id, "namespace": namespace}))
        if job_id not in self.jobs:
            raise http_error(404, "Job not found")
        if self.jobs[job_id].get("script"):
            stage, lines = self.jobs[job_id]["script"].pop(0)
            self.set_stage(job_id, stage, None, lines)
        return self._info(job_id)

    def fetch_job_logs(self, *, job_id, namespace=None, follow=False, tail=None, token=None):
        self.calls.append(("fetch_job_logs", {"job_id": job_id, "follow": follow, "tail": tail}))
        if job_id not in self.jobs:
            raise http_error(404, "Job not found")
        lines = self.jobs[job_id]["logs"]
        return iter(lines[-tail:] if tail else lines)

    def cancel_job(self, *, job_id, namespace=None, token=None):
        self.calls.append(("cancel_job", {"job_id": job_id, "namespace": namespace}))
        if job_id not in self.jobs:
            raise http_error(404, "Job not found")
        self.jobs[job_id]["stage"] = "CANCELED"

    # -- dataset repos (ROOT/ORG/NAME)
    def _repo(self, repo_id: str) -> Path:
        assert self.repos is not None, "give JobsHfApi(repos=FOLDER) for the repo calls"
        return self.repos / repo_id

    def create_repo(self, repo_id, *, repo_type=None, private=None, exist_ok=False, token=None):
        self.calls.append(("create_repo", {"repo_id": repo_id, "repo_type": repo_type, "private": private}))
        self._repo(repo_id).mkdir(parents=True, exist_ok=exist_ok)

    def hf_hub_download(self, repo_id, filename, *, repo_type=None, **kwargs):
        self.calls.append(("hf_hub_download", {"repo_id": repo_id, "filename": filename, "repo_type": repo_type}))
        path = self._repo(repo_id) / filename
        if not path.is_file():
            raise http_error(404, "Entry not found")
        return str(path)

    def snapshot_download(self, repo_id, *, repo_type=None, local_dir=None, **kwargs):
        import shutil

        self.calls.append(("snapshot_download", {"repo_id": repo_id, "repo_type": repo_type}))
        if not self._repo(repo_id).is_dir():
            raise http_error(404, "Repository not found")
        shutil.copytree(self._repo(repo_id), local_dir, dirs_exist_ok=True)
        return str(local_dir)

    def upload_file(self, *, path_or_fileobj, path_in_repo, repo_id, repo_type=None, **kwargs):
        self.calls.append(("upload_file", {"path_in_repo": path_in_repo, "repo_id": repo_id, "repo_type": repo_type}))
        target = self._repo(repo_id) / path_in_repo
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(Path(path_or_fileobj).read_bytes())

    def upload_folder(self, *, folder_path, repo_id, repo_type=None, **kwargs):
        import shutil

        self.calls.append(("upload_folder", {"repo_id": repo_id, "repo_type": repo_type}))
        shutil.copytree(folder_path, self._repo(repo_id), dirs_exist_ok=True)


def wheel_file(folder: Path, version: str, requires: Sequence[str]) -> Path:
    """A wheel of negt2ibench VERSION declaring REQUIRES (its METADATA and WHEEL only)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"negt2ibench-{version}-py3-none-any.whl"
    info = f"negt2ibench-{version}.dist-info"
    metadata = f"Metadata-Version: 2.4\nName: negt2ibench\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {line}\n" for line in requires)
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", metadata)
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
    return path


def double_jobs(
    locator: str,
    folder: Path,
    *,
    images_from: Path | None = None,
    dataset: Path | None = None,
    gate: Path | None = None,
    secret: bytes | None = None,
):
    """A `LocalBackend` whose jobs run `verify-job` with the rectangle double (`verify_job_double`)."""
    from leaderboard.checks.check_setup import SECRET_ENV
    from leaderboard.jobs.job_backends import LocalBackend

    command = [sys.executable, "-m", "tests.helpers.verify_job_double", *(["--gate", str(gate)] if gate else []), "--"]
    extra = ["--images-from", str(images_from)] if images_from is not None else []
    extra += ["--dataset", str(dataset)] if dataset is not None else []
    env = {"PYTHONPATH": str(REPO), "NEGT2I_HOME": str(folder / "job_home")}
    if secret is not None:
        env[SECRET_ENV] = secret.decode()
    return LocalBackend(locator, folder / "job_logs", command=command, extra=extra, env=env)
