"""`negt2ibench leaderboard publish` and `negt2ibench leaderboard hub-check`: the store's verified
entries on the Hub (their `.eval_results` as a pull request; the Hub's own scores checked)."""

from __future__ import annotations

import argparse
import os

from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import (
    add_home_option,
    commit_sha,
    http_url,
    repo_id,
)


def _dataset_id(args: argparse.Namespace) -> str:
    from leaderboard.hub.entry_eval_results import HUB_DATASET_ENV

    dataset = args.dataset_id or os.environ.get(HUB_DATASET_ENV)
    if not dataset:
        raise UsageError(f"name the benchmark's dataset repo: --dataset-id ORG/NAME (or set {HUB_DATASET_ENV})")
    return repo_id(dataset)


def _find_entry(entries, wanted: str):
    """The entry whose submission id is WANTED or starts with it (as `leaderboard list` prints 8 digits)."""
    from leaderboard.text.submitted_names import quoted_entry_id, typed_entry_id

    typed, shown = typed_entry_id(wanted), quoted_entry_id(wanted)  # cut as the app cuts it
    found = [entry for entry in entries if entry.submission_id.startswith(typed)] if typed else []
    if len(found) == 1:
        return found[0]
    if not found:
        raise UserError(f"no submission '{shown}' in the store (`negt2ibench leaderboard list` shows them)")
    raise UserError(f"{len(found)} submissions start with '{shown}'; give more of the id")


def _publish(args: argparse.Namespace) -> int:
    from evaluator.hub_results import EVAL_RESULTS_PATH, open_pull_request
    from leaderboard.hub.entry_eval_results import (
        SPACE_URL_ENV,
        entry_eval_results,
        entry_page_url,
        model_repo_of,
        space_base_url,
    )
    from leaderboard.store.sqlite_store import open_store

    dataset = _dataset_id(args)
    base = space_base_url(args.space_url)
    if not base:
        raise UsageError(
            f"name the Space whose entry this is: --space-url URL (or set {SPACE_URL_ENV}), e.g. "
            "https://huggingface.co/spaces/ORG/negt2ibench"
        )
    entry = _find_entry(open_store(args.home).list_entries(), args.entry)
    linked = model_repo_of(entry)
    if linked and linked.lower() != args.model_repo.lower():
        raise UserError(
            f"entry {entry.submission_id[:8]} ({entry.model_name}) links the model {linked}, not {args.model_repo}; "
            "publish it to the model it was submitted for"
        )
    from evaluator.hub_results import dataset_revision

    revision = args.dataset_revision or dataset_revision(dataset)
    try:
        page = entry_page_url(base, entry.submission_id)
        text = entry_eval_results(entry, dataset_id=dataset, dataset_revision=revision, page_url=page)
    except ValueError as error:
        raise UserError(f"entry {entry.submission_id[:8]} ({entry.model_name}): {error}") from None
    print(text, end="")
    if linked is None:
        print(
            f"note: the entry's link is not {args.model_repo}'s Hub page, so `hub-check` cannot match the Hub's row "
            "of that model to this entry"
        )
    if args.dry_run:
        print(f"dry run: no pull request opened on {args.model_repo}")
        return 0
    url = open_pull_request(text, args.model_repo, description=pull_request_description(entry, base))
    print(f"opened a pull request adding {EVAL_RESULTS_PATH} to {args.model_repo}: {url}")
    return 0


def _hub_check(args: argparse.Namespace) -> int:
    from dataset_builder.hub import hub_errors
    from leaderboard.hub.hub_check import hub_check_lines, hub_matches, read_hub_rows
    from leaderboard.store.sqlite_store import open_store
    from leaderboard.text.submitted_names import terminal_text

    dataset = _dataset_id(args)
    entries = open_store(args.home).list_entries()
    from huggingface_hub import HfApi

    with hub_errors(f"read the Hub leaderboard of {dataset}"):
        reading = read_hub_rows(HfApi(), dataset)
    print(f"the Hub's leaderboard of {dataset} (task overall), against {len(entries)} submission(s) here:")
    for line in hub_check_lines(hub_matches(reading.rows, entries), reading.bad):
        print(terminal_text(line))  # the Hub's strings are strangers': no escape sequence reaches the terminal
    return 0


def pull_request_description(entry, base: str) -> str:
    """The pull request's description: the submitter's name as a code span (Markdown shows it as
    typed: no link, mention or HTML of theirs reaches the model's repo), the entry and the Space."""
    from leaderboard.text.submitted_names import clip, code_span

    name = code_span(clip(entry.model_name, 100))
    return (
        f"NegT2IBench scores of {name} (entry {entry.submission_id[:8]}), verified by the NegT2IBench Space ({base})."
    )


def register_hub_actions(actions: argparse._SubParsersAction) -> None:
    """Add `publish` and `hub-check` to `negt2ibench leaderboard`."""
    publish = actions.add_parser(
        "publish",
        help="open a pull request adding a verified entry's .eval_results YAML to its model repo",
        description=(
            "Write the .eval_results YAML of a verified entry of the store (one entry per task of the benchmark's "
            "eval.yaml, its ranked numbers, source.url = the entry's page in the Space, notes saying how it was "
            "verified), print it, and open a pull request on the model repo adding .eval_results/negt2ibench.yaml "
            "(token: `hf auth login` or HF_TOKEN). A pending or rejected entry has none. docs/hub.md."
        ),
        epilog="example: negt2ibench leaderboard publish 0123abcd --model-repo ORG/MODEL --dataset-id ORG/NegT2IBench",
    )
    publish.add_argument("entry", metavar="ENTRY", help="the submission id (or its first characters, as `list` shows)")
    publish.add_argument("--model-repo", required=True, type=repo_id, metavar="ORG/MODEL", help="the model repo")
    publish.add_argument(
        "--space-url", type=http_url, metavar="URL", help="the Space's address (default $NEGT2I_SPACE_URL)"
    )
    publish.add_argument(
        "--dataset-revision",
        type=commit_sha,
        metavar="SHA",
        help="dataset.revision: the benchmark dataset's commit (default: its current commit, read from the Hub; "
        "required offline)",
    )
    publish.add_argument("--dry-run", action="store_true", help="print the YAML; open no pull request")
    check = actions.add_parser(
        "hub-check",
        help="compare the Hub's leaderboard of the benchmark with the entries verified here",
        description=(
            "Read the benchmark's leaderboard on the Hub (HfApi.get_dataset_leaderboard: the models whose "
            ".eval_results name the dataset, on its first task, overall) and match each row to the store's "
            "verified entries by model repo (the entry's link to its Hub model page): verified here, same value; "
            "verified here, differs by X points; or not verified here."
        ),
        epilog="example: negt2ibench leaderboard hub-check --dataset-id ORG/NegT2IBench",
    )
    for sub in (publish, check):
        sub.add_argument(
            "--dataset-id",
            type=repo_id,
            metavar="ORG/NAME",
            help="the benchmark's dataset repo (default $NEGT2I_HUB_DATASET)",
        )
        add_home_option(sub, "NEGT2I_HOME (where the SQLite leaderboard lives)")
    publish.set_defaults(handler=_publish)
    check.set_defaults(handler=_hub_check)
