"""The Hub's self-reported NegT2IBench scores, checked against the entries verified here.

`HfApi.get_dataset_leaderboard(dataset_id)` lists the benchmark's Hub leaderboard: one row per model
repo with a `.eval_results` file naming the dataset (merged or in an open pull request). It takes
no task: the Hub shows a benchmark's first task unless asked for another (`leaderboard_task_id` of
its leaderboard embed, docs/hub/leaderboard-data-guide.md), and our first task is `overall`, so
each row is compared with an entry's `overall` value. A row is matched to our ranked entries by
model repo (`hub_results.model_repo_of`: the entry's link to its model page) and gets one of three
outcomes (`HubMatch.text`): *verified here, same value* (equal at the published precision, one
decimal), *verified here, differs by X points* (Hub − ours), *not verified here*. It is read with
`base_model_only=False`: the Hub's default view leaves out every repo that declares a `base_model`
(a fine-tune of another model), and a fine-tune's self-reported score needs checking as much as any.

`HubLeaderboard` keeps the last reading in memory for the Space (read at start-up and hourly by a
background thread; any failure becomes "Hub not reachable", never an exception in a handler), and
`hub_cells` / `hub_status_markdown` draw it beside the Space's leaderboard.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluator.hub_results import task_values

from .hub_results import model_repo_of
from .names import plain_markdown
from .ranking import REPORTED, ranked_entries
from .store import Entry

log = logging.getLogger(__name__)
HUB_TASK = "overall"  # the task the Hub's leaderboard shows by default: our first
HUB_REFRESH_SECONDS = 60 * 60
NOT_REACHABLE = "Hub not reachable"
Outcome = Literal["same", "differs", "not_verified"]


@dataclass(frozen=True)
class HubRow:
    """What we use of one `DatasetLeaderboardEntry`."""

    rank: int
    model_id: str
    value: float
    pull_request: int | None = None
    source_url: str | None = None

    @classmethod
    def of(cls, entry: Any) -> HubRow:
        source = getattr(entry, "source", None) or {}
        return cls(
            rank=int(entry.rank),
            model_id=str(entry.model_id),
            value=float(entry.value),
            pull_request=getattr(entry, "pull_request", None),
            source_url=source.get("url") if isinstance(source, dict) else None,
        )


@dataclass(frozen=True)
class HubMatch:
    """A Hub row and what we know of it: the outcome, the entry it matched and our value."""

    row: HubRow
    outcome: Outcome
    entry: Entry | None = None
    ours: float | None = None

    @property
    def difference(self) -> float | None:
        """Hub − ours, in percentage points (None unless matched)."""
        return None if self.ours is None else self.row.value - self.ours

    def text(self) -> str:
        if self.outcome == "not_verified":
            return "not verified here"
        if self.outcome == "same":
            return "verified here, same value"
        return f"verified here, differs by {self.difference:+.1f} points"


def _same(hub_value: float, ours: float) -> bool:
    return f"{hub_value:.1f}" == f"{ours:.1f}"


def hub_matches(rows: Sequence[HubRow], entries: Sequence[Entry]) -> list[HubMatch]:
    """Each Hub row (in rank order) matched to the ranked entries by model repo. When several ranked
    entries name one repo, the one closest to the Hub's value is taken."""
    by_repo: dict[str, list[tuple[Entry, float]]] = {}
    for entry in ranked_entries(entries):
        repo = model_repo_of(entry)
        if repo and entry.row:
            try:
                value = task_values(entry.row)[HUB_TASK]
            except ValueError:
                continue
            by_repo.setdefault(repo.lower(), []).append((entry, value))
    matches = []
    for row in sorted(rows, key=lambda r: r.rank):
        candidates = by_repo.get(row.model_id.lower(), [])
        if not candidates:
            matches.append(HubMatch(row, "not_verified"))
            continue
        entry, ours = min(candidates, key=lambda pair: abs(pair[1] - row.value))
        matches.append(HubMatch(row, "same" if _same(row.value, ours) else "differs", entry, ours))
    return matches


# --------------------------------------------------------------------------- the cached reading


@dataclass(frozen=True)
class HubSnapshot:
    """The last reading of the Hub's leaderboard: its rows (None: never read), when, the problem
    of the last attempt ("" when it worked), and the dataset's commit (None: never read)."""

    dataset_id: str
    rows: tuple[HubRow, ...] | None = None
    read_at: float | None = None
    problem: str = ""
    tried_at: float | None = None
    revision: str | None = None  # the benchmark dataset's commit, the `.eval_results` files' dataset.revision


def read_hub_rows(api: Any, dataset_id: str) -> tuple[HubRow, ...]:
    """The Hub's leaderboard of DATASET_ID through API (`HfApi.get_dataset_leaderboard`)."""
    return tuple(HubRow.of(entry) for entry in api.get_dataset_leaderboard(dataset_id, base_model_only=False))


def hub_problem(error: BaseException, dataset_id: str) -> str:
    """One line for a failed reading: a dataset without a Hub leaderboard (HTTP 404), else "Hub not reachable"."""
    status = getattr(getattr(error, "response", None), "status_code", None)
    if status == 404:
        return f"no Hub leaderboard for {dataset_id} yet (eval.yaml pushed and allow-listed? docs/hub.md)"
    return NOT_REACHABLE


def default_api() -> Any:
    from huggingface_hub import HfApi

    return HfApi()


class HubLeaderboard:
    """The Hub's leaderboard of the benchmark, cached: `refresh()` reads it (the app's thread calls it
    at start-up and hourly), `snapshot` is the last reading. Never raises."""

    def __init__(self, dataset_id: str, api: Callable[[], Any] = default_api, clock: Callable[[], float] = time.time):
        self.dataset_id = dataset_id
        self._api, self._clock = api, clock
        self._lock = threading.Lock()
        self._snapshot = HubSnapshot(dataset_id)

    @property
    def snapshot(self) -> HubSnapshot:
        with self._lock:
            return self._snapshot

    def refresh(self) -> HubSnapshot:
        now = self._clock()
        revision = self.snapshot.revision
        try:
            api = self._api()
            revision = self._revision(api, revision)
            rows = read_hub_rows(api, self.dataset_id)
        except Exception as error:  # noqa: BLE001 - whatever the Hub does, the board stays up
            log.warning("reading the Hub leaderboard of %s failed: %s", self.dataset_id, error)
            with self._lock:
                self._snapshot = HubSnapshot(
                    self.dataset_id,
                    self._snapshot.rows,  # the last good reading is kept, and said to be old
                    self._snapshot.read_at,
                    hub_problem(error, self.dataset_id),
                    now,
                    revision,
                )
                return self._snapshot
        with self._lock:
            self._snapshot = HubSnapshot(self.dataset_id, rows, now, "", now, revision)
            return self._snapshot

    def _revision(self, api: Any, last: str | None) -> str | None:
        """The dataset's current commit (`HfApi.dataset_info`), else the last one read: a dataset not yet
        allow-listed has a commit but no leaderboard, so this is read on its own."""
        try:
            return str(api.dataset_info(self.dataset_id).sha)
        except Exception as error:  # noqa: BLE001 - the YAML waits for a commit; the board stays up
            log.warning("reading the commit of %s failed: %s", self.dataset_id, error)
            return last


# --------------------------------------------------------------------------- views


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(seconds)) if seconds is not None else "never"


def hub_cells(
    model_names: Sequence[str], statuses: Sequence[str], entries: Sequence[Entry], snapshot: HubSnapshot
) -> list[str]:
    """The leaderboard's `hub` column: for each row (model name and status), what the Hub says of
    that model; the paper's reported rows get none."""
    ranked = {entry.model_name: entry for entry in ranked_entries(entries)}
    by_entry: Mapping[str, HubMatch] = {}
    if snapshot.rows is not None:
        by_entry = {m.entry.submission_id: m for m in hub_matches(snapshot.rows, entries) if m.entry is not None}
    cells = []
    for name, status in zip(model_names, statuses, strict=True):
        entry = None if status == REPORTED else ranked.get(name)
        if entry is None:
            cells.append("")  # the paper's rows are not on the Hub
        elif snapshot.rows is None:
            cells.append(snapshot.problem or NOT_REACHABLE)
        elif model_repo_of(entry) is None:
            cells.append("no Hub model link")
        elif entry.submission_id not in by_entry:
            cells.append("not on the Hub")
        else:
            match = by_entry[entry.submission_id]
            cells.append(
                "on the Hub: same value"
                if match.outcome == "same"
                else f"on the Hub: {match.row.value:.1f} ({match.difference:+.1f} points)"
            )
    return cells


def hub_status_markdown(snapshot: HubSnapshot | None, entries: Sequence[Entry]) -> str:
    """The line under the leaderboard: the Hub's rows by outcome, or why they cannot be shown."""
    if snapshot is None:
        return "Hub check: off (set NEGT2I_HUB_DATASET to the benchmark's dataset repo)."
    where = f"the Hub's leaderboard of {plain_markdown(snapshot.dataset_id)}"
    if snapshot.rows is None:
        problem = plain_markdown(snapshot.problem or NOT_REACHABLE)
        return f"Hub check, {where}: **{problem}** (tried {_when(snapshot.tried_at)}; retried hourly)."
    matches = hub_matches(snapshot.rows, entries)
    counts = {
        outcome: sum(1 for m in matches if m.outcome == outcome) for outcome in ("same", "differs", "not_verified")
    }
    unverified = ", ".join(plain_markdown(m.row.model_id) for m in matches if m.outcome == "not_verified")
    stale = f" {plain_markdown(snapshot.problem)} since {_when(snapshot.tried_at)}." if snapshot.problem else ""
    return (
        f"Hub check, {where} (read {_when(snapshot.read_at)}, task {HUB_TASK}): {len(matches)} rows; "
        f"{counts['same']} verified here, same value; {counts['differs']} verified here, different value; "
        f"{counts['not_verified']} not verified here{': ' + unverified if unverified else ''}.{stale}"
    )


def hub_check_lines(matches: Sequence[HubMatch]) -> list[str]:
    """What `negt2ibench leaderboard hub-check` prints: one line per Hub row, then the counts."""
    lines = []
    for match in matches:
        row = match.row
        pr = f" (open pull request #{row.pull_request})" if row.pull_request else ""
        detail = ""
        if match.entry is not None:
            detail = f"; ours {match.ours:.1f}, entry {match.entry.submission_id[:8]} ({match.entry.model_name})"
        lines.append(f"#{row.rank} {row.model_id}{pr}: {row.value:.1f} on the Hub: {match.text()}{detail}")
    counts = {
        outcome: sum(1 for m in matches if m.outcome == outcome) for outcome in ("same", "differs", "not_verified")
    }
    lines.append(
        f"{len(matches)} Hub rows: {counts['same']} verified here with the same value, {counts['differs']} verified "
        f"here with another value, {counts['not_verified']} not verified here"
    )
    return lines
