"""`--hf-job FLAVOR` on `score`, `generate` and `judge`, and `negt2ibench jobs status|logs|cancel|exec`.

The same command runs as a Hugging Face Job on the user's account (`negt2ibench.core.hf_jobs`,
exactly this version of the package): its local inputs are uploaded first (the account's private
jobs-artifacts bucket, `HfApi.sync_job_volume`) and a Hub dataset given as `--images` is mounted
read-only; inside the job, `jobs exec` fetches what a previous run already pushed (the command
resumes), runs the command, and pushes its output to the dataset repo named by `--push-to`
(pushed even when the command fails, so a rerun resumes). Without `--detach` the job is followed
here (its stage and its logs' last lines) and its output fetched into `--out` at the end.
"""

from __future__ import annotations

import argparse
import shlex
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .core.errors import UsageError, UserError
from .core.options import REPO_ID, duration, job_flavor, repo_id

MOUNT = "/negt2i"
OUT = "out"  # the job's output folder (relative to its working directory)
HF_JOB_DESTS = ("hf_job", "hf_job_timeout", "push_to", "detach")
POLL_SECONDS = 15.0  # between two looks at a followed job (its state and its logs' last lines)


@dataclass(frozen=True)
class RemoteCommand:
    """How one command runs as a job: which options name inputs (a local path is uploaded, a Hub
    dataset id mounted), which names its output (a file or a dataset folder), what is forced
    (fetch the models) or left out (this machine's paths), what runs first, and the extras."""

    name: str
    inputs: tuple[str, ...]
    output: str
    output_is_folder: bool = False
    forced: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ("weights_dir", "device")
    prepare: tuple[str, ...] = ()
    extras: tuple[str, ...] = ("models",)
    timeout: str = "3h"


REMOTE = {
    "score": RemoteCommand("score", ("images", "prompts"), "out", prepare=("download-models",)),
    "generate": RemoteCommand(
        "generate", ("prompts", "metadata"), "out", output_is_folder=True, forced=("download",), timeout="12h"
    ),
    "judge": RemoteCommand(
        "judge", ("images", "prompts"), "out", forced=("download",), extras=("judges",), timeout="6h"
    ),
}


def add_hf_job_options(parser: argparse.ArgumentParser, command: str) -> None:
    """`--hf-job FLAVOR` and its companions on COMMAND's parser."""
    group = parser.add_argument_group("run on the Hub's GPUs (docs/hub-jobs.md)")
    group.add_argument(
        "--hf-job",
        type=job_flavor,
        metavar="FLAVOR",
        help="run this same command as a Hugging Face Job on your account, on FLAVOR (e.g. l4x1, a10g-large, "
        "l40sx1, h200); needs --push-to",
    )
    group.add_argument(
        "--push-to", type=repo_id, metavar="ORG/NAME", help="with --hf-job: the dataset repo the output is pushed to"
    )
    group.add_argument(
        "--hf-job-timeout",
        type=duration,
        default=duration(REMOTE[command].timeout),
        metavar="DURATION",
        help=f"with --hf-job: stop (and stop paying) after this long, e.g. 90m, 6h (default {REMOTE[command].timeout})",
    )
    group.add_argument("--detach", action="store_true", help="with --hf-job: print the job's id and return at once")
    parser.set_defaults(hf_job_parser=parser, hf_job_command=command)


def wants_hf_job(args: argparse.Namespace) -> bool:
    """Whether ARGS ask for a Hub job; its companion options without --hf-job are a usage error."""
    if getattr(args, "hf_job", None):
        return True
    if getattr(args, "push_to", None) or getattr(args, "detach", False):
        raise UsageError("--push-to and --detach go with --hf-job FLAVOR")
    return False


def unparse(parser: argparse.ArgumentParser, args: argparse.Namespace, changes: dict[str, Any]) -> list[str]:
    """The command line that parses back to ARGS (with CHANGES: dest → value, None drops it)."""
    line: list[str] = []
    for action in parser._actions:
        if not action.option_strings or action.dest in HF_JOB_DESTS or action.dest in ("help", "verbose"):
            continue
        value = changes[action.dest] if action.dest in changes else getattr(args, action.dest, None)
        if value is None or (action.dest not in changes and value == action.default):
            continue
        option = max(action.option_strings, key=len)
        if isinstance(action, argparse._StoreTrueAction):
            line += [option] if value else []
        elif isinstance(action, argparse._StoreFalseAction):
            line += [] if value else [option]
        elif isinstance(value, (list, tuple)):
            line += [option, *map(str, value)]
        else:
            line += [option, str(value)]
    return line


def _is_hub_dataset(value: str) -> bool:
    return bool(REPO_ID.match(value)) and not Path(value).exists()


class Launcher:
    """Turns a parsed command into a job: inputs uploaded or mounted, output under OUT, the request."""

    def __init__(self, api: Any, args: argparse.Namespace):
        self.api, self.args = api, args
        self.spec = REMOTE[args.hf_job_command]
        self.volumes: list[Any] = []

    def _input(self, dest: str, value: str, jobs: Any) -> str:
        from huggingface_hub import Volume

        mount = f"{MOUNT}/{dest}"
        if _is_hub_dataset(value):
            self.volumes.append(Volume(type="dataset", source=value, mount_path=mount, read_only=True))
            return mount
        path = Path(value).expanduser()
        if not path.exists():
            raise UserError(f"--{dest.replace('_', '-')} {value}: no such file or folder here, nor a Hub dataset id")
        with tempfile.TemporaryDirectory(prefix="negt2i_job_input_") as staging:
            folder = path if path.is_dir() else Path(staging)
            if path.is_file():
                shutil.copy2(path, folder / path.name)
            print(f"uploading {path} to your jobs-artifacts bucket ...", flush=True)
            self.volumes.append(self.api.sync_job_volume(str(folder), mount, read_only=True, namespace=jobs.namespace))
        return mount if path.is_dir() else f"{mount}/{path.name}"

    def remote_args(self, jobs: Any) -> tuple[list[str], str]:
        """`jobs exec ... -- COMMAND ...` for the job, and the output's path in the repo."""
        args, spec = self.args, self.spec
        changes: dict[str, Any] = {dest: None for dest in spec.dropped}
        for dest in spec.inputs:
            value = getattr(args, dest, None)
            if value:
                changes[dest] = self._input(dest, str(value), jobs)
        local_out = getattr(args, spec.output, None)
        if not local_out:
            raise UsageError(f"{spec.name} --hf-job needs --out")
        name = Path(str(local_out)).name
        changes[spec.output] = f"{OUT}/{name}"
        for dest in spec.forced:
            changes[dest] = True
        command = [spec.name, *unparse(args.hf_job_parser, args, changes)]
        wrapper = ["jobs", "exec", "--push-to", args.push_to, "--output", f"{OUT}/{name}"]
        wrapper += ["--folder"] if spec.output_is_folder else []
        for step in spec.prepare:
            wrapper += ["--prepare", step if step != "download-models" else f"download-models --preset {args.preset}"]
        return [*wrapper, "--", *command], name


def _token(what: str = "--hf-job runs") -> str:
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise UserError(f"{what} on your Hugging Face account: log in (`hf auth login`) or set HF_TOKEN")
    return token


def _jobs(api: Any, args: argparse.Namespace | None = None, *, package: bool = False):
    from . import __version__
    from .core.hf_jobs import HfJobs, job_package

    made = None
    if package:
        from leaderboard.store.sqlite_store import negt2i_home

        extras = REMOTE[args.hf_job_command].extras if args is not None else ("models",)
        made = job_package(__version__, Path(__file__).resolve().parent.parent, negt2i_home(), extras)
    return HfJobs(api, package=made)


def hf_api(token: str | None = None) -> Any:
    from huggingface_hub import HfApi

    return HfApi(token=token)


def run_on_hub(args: argparse.Namespace) -> int:
    """Launch ARGS's command as a job; follow it unless --detach. The exit code."""
    from dataset_builder.hub import hub_errors

    with hub_errors(f"run {args.hf_job_command} as a Hugging Face Job"):
        return _run_on_hub(args)


def _run_on_hub(args: argparse.Namespace) -> int:
    from .core.hf_jobs import JobRequest

    if not args.push_to:
        raise UsageError("--hf-job needs --push-to ORG/NAME: the dataset repo the job pushes its output to")
    token = _token()
    api = hf_api(token)
    jobs = _jobs(api, args, package=True)
    launcher = Launcher(api, args)
    remote, name = launcher.remote_args(jobs)
    labels = {"negt2ibench-command": args.hf_job_command, "negt2ibench-output": args.push_to}
    request = JobRequest(
        remote, args.hf_job, args.hf_job_timeout, extras=launcher.spec.extras, secrets={"HF_TOKEN": token},
        labels=labels, volumes=launcher.volumes,
    )  # fmt: skip
    ref = jobs.launch(request)
    where = f"https://huggingface.co/datasets/{args.push_to}"
    print(f"job {ref.job_id} launched on {args.hf_job} ({ref.url}); output: {where} ({name})")
    if args.detach:
        print(f"follow it with `negt2ibench jobs logs {ref.job_id} --follow`; `negt2ibench jobs status {ref.job_id}`")
        return 0
    state = jobs.follow(ref.job_id, lambda line: print(line, flush=True), every=POLL_SECONDS)
    if state.stage != "COMPLETED":
        from .core.hf_jobs import last_error_line

        last = last_error_line(jobs.tail(ref.job_id, 40), state.message)
        raise UserError(f"job {ref.job_id} ended {state.stage}: {last or 'no log line'} ({ref.url})")
    fetch_output(
        api, args.push_to, name, Path(str(getattr(args, launcher.spec.output))), launcher.spec.output_is_folder
    )
    return 0


def fetch_output(api: Any, repo: str, name: str, local: Path, folder: bool) -> None:
    """The job's pushed output, into LOCAL (a file, or a dataset folder)."""
    if folder:
        api.snapshot_download(repo, repo_type="dataset", local_dir=str(local))
    else:
        fetched = Path(api.hf_hub_download(repo, name, repo_type="dataset"))
        local.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(fetched, local)
    print(f"output fetched from {repo} into {local}")


# -- inside the job ---------------------------------------------------------------------------------


def _resume(api: Any, repo: str, output: Path, folder: bool) -> str:
    """OUTPUT as a previous run pushed it to REPO (the command then resumes from it); what was found."""
    try:
        if folder:
            api.snapshot_download(repo, repo_type="dataset", local_dir=str(output))
        else:
            fetched = Path(api.hf_hub_download(repo, output.name, repo_type="dataset"))
            output.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(fetched, output)
    except Exception as error:  # noqa: BLE001 - nothing pushed yet (404), or unreadable: start afresh
        return f"starting afresh: nothing to resume from in {repo} ({type(error).__name__})"
    if output.is_dir() and not any(output.iterdir()):
        return f"starting afresh: {repo} is empty"
    return f"resuming from {repo}: {output.name} fetched"


def _exec(args: argparse.Namespace) -> int:
    """`jobs exec`: resume from the repo, run the prepare steps and the command, push the output."""
    from .cli import main

    command = args.exec_command[1:] if args.exec_command[:1] == ["--"] else args.exec_command
    if not command:
        raise UsageError("jobs exec needs a command after --")
    api = hf_api()
    output = Path(args.output)
    name = output.name
    api.create_repo(args.push_to, repo_type="dataset", private=True, exist_ok=True)
    print(_resume(api, args.push_to, output, args.folder), flush=True)
    for step in args.prepare:
        code = main(shlex.split(step))
        if code:
            return code
    code = main(list(command))
    if output.exists():
        if args.folder:
            api.upload_folder(folder_path=str(output), repo_id=args.push_to, repo_type="dataset")
        else:
            api.upload_file(path_or_fileobj=str(output), path_in_repo=name, repo_id=args.push_to, repo_type="dataset")
        print(f"pushed {output} to {args.push_to}", flush=True)
    return code


# -- jobs status | logs | cancel ---------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    from dataset_builder.hub import hub_errors

    with hub_errors(f"read job {args.job_id}"):
        state = _jobs(hf_api(_token("jobs live"))).state(args.job_id)
    print(f"{args.job_id}: {state.stage}" + (f" ({state.message})" if state.message else "") + f" {state.url}".rstrip())
    return 0


def _logs(args: argparse.Namespace) -> int:
    from dataset_builder.hub import hub_errors

    with hub_errors(f"read the logs of job {args.job_id}"):
        jobs = _jobs(hf_api(_token("jobs live")))
        if args.follow:
            state = jobs.follow(args.job_id, print, lines=args.tail, every=POLL_SECONDS)
            return 0 if state.stage == "COMPLETED" else 1
        for line in jobs.tail(args.job_id, args.tail):
            print(line)
    return 0


def _cancel(args: argparse.Namespace) -> int:
    from dataset_builder.hub import hub_errors

    with hub_errors(f"cancel job {args.job_id}"):
        _jobs(hf_api(_token("jobs live"))).cancel(args.job_id)
    print(f"{args.job_id}: cancel requested")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    from .core.options import positive_int

    jobs = subparsers.add_parser(
        "jobs",
        help="the Hugging Face Jobs a --hf-job command launched: status, logs, cancel",
        description="Read or stop a Hugging Face Job launched by `score|generate|judge --hf-job` (your token: "
        "`hf auth login` or HF_TOKEN). `exec` is what runs inside such a job.",
    )
    actions = jobs.add_subparsers(dest="action", metavar="ACTION", required=True)
    status = actions.add_parser("status", help="the job's stage and its page")
    logs = actions.add_parser("logs", help="the job's last log lines (--follow: until it ends)")
    cancel = actions.add_parser("cancel", help="stop the job (and its billing)")
    for sub in (status, logs, cancel):
        sub.add_argument("job_id", metavar="ID", help="the job's id (printed at launch)")
    logs.add_argument("--tail", type=positive_int, default=40, metavar="N", help="lines (default 40)")
    logs.add_argument("--follow", action="store_true", help="keep printing new lines until the job ends")
    run = actions.add_parser(
        "exec",
        help="(inside a job) fetch earlier output, run a command, push its output",
        description="What a --hf-job runs: fetch OUTPUT from --push-to if a previous run pushed it (the command "
        "resumes), run each --prepare command and then COMMAND (negt2ibench's own arguments), and push OUTPUT "
        "to --push-to, even when the command failed. Exit code: the command's.",
    )
    run.add_argument("--push-to", type=repo_id, required=True, metavar="ORG/NAME", help="the dataset repo")
    run.add_argument("--output", required=True, metavar="PATH", help="the command's output file (or folder)")
    run.add_argument("--folder", action="store_true", help="OUTPUT is a folder (pushed as the repo's contents)")
    run.add_argument("--prepare", action="append", default=[], metavar="COMMAND", help="a command to run first")
    run.add_argument("exec_command", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the negt2ibench command")
    status.set_defaults(handler=_status)
    logs.set_defaults(handler=_logs)
    cancel.set_defaults(handler=_cancel)
    run.set_defaults(handler=_exec)


__all__ = ["REMOTE", "add_hf_job_options", "register", "run_on_hub", "unparse", "wants_hf_job"]
