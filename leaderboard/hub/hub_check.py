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

Each row is read on its own (`read_hub_rows` → `HubReading`): a row whose rank or model id is not
one (a repo id by the Hub's rules) is reported as bad and the rest go on; a value that is not a
finite number from 0 to 100 is flagged (`HubRow.problem`), never shown as a number nor compared.
Several rows can name one repo (a merged `.eval_results` and pull requests anyone may open): the
row compared is the merged one, else the pull request the Hub ranks first (`pick_row`), and the
output says how many rows that repo has.

`HubLeaderboard` keeps the last reading in memory for the Space (read at start-up and hourly by a
background thread; any failure becomes "Hub not reachable", never an exception in a handler), and
`hub_cells` / `hub_status_markdown` draw it beside the Space's leaderboard.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evaluator.hub_results import task_values
from leaderboard.hub.entry_eval_results import model_repo_of
from leaderboard.store.ranking import REPORTED, ranked_entries
from leaderboard.store.sqlite_store import Entry
from leaderboard.text.submitted_names import clip, hub_repo_id, plain_markdown

log = logging.getLogger(__name__)
HUB_TASK = "overall"  # the task the Hub's leaderboard shows by default: our first
HUB_REFRESH_SECONDS = 60 * 60
NOT_REACHABLE = "Hub not reachable"
SHOWN_IDS = 10  # model ids the status line names, at most
ID_CHARS = 100  # characters of a Hub string shown, at most
Outcome = Literal["same", "differs", "not_verified", "bad_value"]


@dataclass(frozen=True)
class HubRow:
    """What we use of one `DatasetLeaderboardEntry`; `problem` says why its value is not a score."""

    rank: int
    model_id: str
    value: float | None
    pull_request: int | None = None  # its number, when the row is an open pull request's and names a readable one
    source_url: str | None = None
    problem: str = ""
    # Whether the row is an open pull request's: any pull-request number the Hub sends, readable or not (a
    # row whose number is "3" or 0 is not read as the merged file: a merged row is one that names none).
    in_pull_request: bool = False

    @classmethod
    def of(cls, entry: Any) -> HubRow:
        """The row, its value checked; ValueError (one line) for a row that is not one at all."""
        rank = getattr(entry, "rank", None)
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise ValueError(f"its rank {clip(repr(rank), 40)} is not a positive whole number")
        model_id = getattr(entry, "model_id", None)
        if not isinstance(model_id, str):
            raise ValueError(f"its model id {clip(repr(model_id), 40)} is not text")
        try:
            hub_repo_id(model_id)
        except ValueError as error:
            raise ValueError(f"its model id: {error}") from None
        value, problem = _score(getattr(entry, "value", None))
        pull = getattr(entry, "pull_request", None)
        source = getattr(entry, "source", None) or {}
        url = source.get("url") if isinstance(source, dict) else None
        return cls(
            rank=rank,
            model_id=model_id,
            value=value,
            pull_request=pull if isinstance(pull, int) and not isinstance(pull, bool) and pull > 0 else None,
            source_url=url if isinstance(url, str) else None,
            problem=problem,
            in_pull_request=pull is not None,
        )

    def pull_request_text(self) -> str:
        """How the row's pull request is named: "pull request #12", "pull request" (its number unreadable)."""
        return f"pull request #{self.pull_request}" if self.pull_request is not None else "pull request"

    def value_text(self) -> str:
        return self.problem if self.value is None else f"{self.value:.1f}"


def _score(value: Any) -> tuple[float | None, str]:
    """A Hub value as a score (a finite percentage), or None and why not."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"value {clip(repr(value), 30)} is not a number"
    number = float(value)
    if not math.isfinite(number):
        return None, f"value {number} is not a finite number"
    if not 0.0 <= number <= 100.0:
        return None, "value out of range (a percentage is 0 to 100)"
    return number, ""


@dataclass(frozen=True)
class HubReading:
    """The rows of the Hub's leaderboard that could be read, and why each other one could not."""

    rows: tuple[HubRow, ...]
    bad: tuple[str, ...] = ()


def pick_row(rows: Sequence[HubRow]) -> HubRow:
    """The row compared for one repo: its merged `.eval_results` (no pull request) before any
    pull request's, and among those the one the Hub ranks first."""
    return min(rows, key=lambda row: (row.in_pull_request, row.rank))


@dataclass(frozen=True)
class HubMatch:
    """A Hub row and what we know of it: the outcome, the entry it matched and our value."""

    row: HubRow
    outcome: Outcome
    entry: Entry | None = None
    ours: float | None = None
    others: tuple[HubRow, ...] = ()  # the repo's other rows (not compared)

    @property
    def difference(self) -> float | None:
        """Hub − ours, in percentage points (None unless matched)."""
        return None if self.ours is None or self.row.value is None else self.row.value - self.ours

    def text(self) -> str:
        if self.outcome == "bad_value":
            return f"not compared: {self.row.problem}"
        if self.outcome == "not_verified":
            return "not verified here"
        if self.outcome == "same":
            return "verified here, same value"
        return f"verified here, differs by {self.difference:+.1f} points"


def _same(hub_value: float, ours: float) -> bool:
    return f"{hub_value:.1f}" == f"{ours:.1f}"


def hub_matches(rows: Sequence[HubRow], entries: Sequence[Entry]) -> list[HubMatch]:
    """One match per repo (its row by `pick_row`, in rank order), matched to the ranked entries by
    model repo. When several ranked entries name one repo, the one closest to the Hub's value is taken."""
    by_repo: dict[str, list[tuple[Entry, float]]] = {}
    for entry in ranked_entries(entries):
        repo = model_repo_of(entry)
        if repo and entry.row:
            try:
                value = task_values(entry.row)[HUB_TASK]
            except ValueError:
                continue
            by_repo.setdefault(repo.lower(), []).append((entry, value))
    grouped: dict[str, list[HubRow]] = {}
    for row in rows:
        grouped.setdefault(row.model_id.lower(), []).append(row)
    matches = []
    for group in grouped.values():
        row = pick_row(group)
        others = tuple(sorted((r for r in group if r is not row), key=lambda r: r.rank))
        candidates = by_repo.get(row.model_id.lower(), [])
        if row.value is None:
            matches.append(HubMatch(row, "bad_value", others=others))
            continue
        if not candidates:
            matches.append(HubMatch(row, "not_verified", others=others))
            continue
        hub_value = row.value
        entry, ours = min(candidates, key=lambda pair: abs(pair[1] - hub_value))
        outcome: Outcome = "same" if _same(hub_value, ours) else "differs"
        matches.append(HubMatch(row, outcome, entry, ours, others))
    return sorted(matches, key=lambda match: match.row.rank)


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
    bad: tuple[str, ...] = ()  # why each row of the last reading that could not be read was not


def read_hub_rows(api: Any, dataset_id: str) -> HubReading:
    """The Hub's leaderboard of DATASET_ID through API (`HfApi.get_dataset_leaderboard`), each row
    read on its own: one that is not a row is reported in `bad` ("row 3: its rank ... "), the rest kept."""
    rows, bad = [], []
    for number, entry in enumerate(api.get_dataset_leaderboard(dataset_id, base_model_only=False), start=1):
        try:
            rows.append(HubRow.of(entry))
        except ValueError as error:
            bad.append(f"row {number}: {error}")
    return HubReading(tuple(rows), tuple(bad))


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
            reading = read_hub_rows(api, self.dataset_id)
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
                    self._snapshot.bad,
                )
                return self._snapshot
        with self._lock:
            self._snapshot = HubSnapshot(self.dataset_id, reading.rows, now, "", now, revision, reading.bad)
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
    by_repo: Mapping[str, HubMatch] = {}
    if snapshot.rows is not None:
        matches = hub_matches(snapshot.rows, entries)
        by_entry = {m.entry.submission_id: m for m in matches if m.entry is not None}
        by_repo = {m.row.model_id.lower(): m for m in matches}
    cells = []
    for name, status in zip(model_names, statuses, strict=True):
        entry = None if status == REPORTED else ranked.get(name)
        repo = model_repo_of(entry) if entry is not None else None
        if entry is None:
            cells.append("")  # the paper's rows are not on the Hub
        elif snapshot.rows is None:
            cells.append(snapshot.problem or NOT_REACHABLE)
        elif repo is None:
            cells.append("no Hub model link")
        elif entry.submission_id in by_entry:
            cells.append(_cell(by_entry[entry.submission_id]))
        elif repo.lower() in by_repo and by_repo[repo.lower()].outcome == "bad_value":
            cells.append(f"on the Hub: {by_repo[repo.lower()].text()}")
        else:
            cells.append("not on the Hub")
    return cells


def _several(match: HubMatch) -> str:
    return f" (1 of {len(match.others) + 1} rows for this repo)" if match.others else ""


def _cell(match: HubMatch) -> str:
    if match.outcome == "same":
        return f"on the Hub: same value{_several(match)}"
    return f"on the Hub: {match.row.value_text()} ({match.difference:+.1f} points){_several(match)}"


def _counts(matches: Sequence[HubMatch]) -> dict[str, int]:
    outcomes = ("same", "differs", "not_verified", "bad_value")
    return {outcome: sum(1 for m in matches if m.outcome == outcome) for outcome in outcomes}


def hub_status_markdown(snapshot: HubSnapshot | None, entries: Sequence[Entry]) -> str:
    """The line under the leaderboard: the Hub's rows by outcome, or why they cannot be shown (every
    Hub string clipped, at most `SHOWN_IDS` ids named)."""
    if snapshot is None:
        return "Hub check: off (set NEGT2I_HUB_DATASET to the benchmark's dataset repo)."
    where = f"the Hub's leaderboard of {plain_markdown(snapshot.dataset_id)}"
    if snapshot.rows is None:
        problem = plain_markdown(snapshot.problem or NOT_REACHABLE)
        return f"Hub check, {where}: **{problem}** (tried {_when(snapshot.tried_at)}; retried hourly)."
    matches = hub_matches(snapshot.rows, entries)
    counts = _counts(matches)
    ids = [plain_markdown(clip(m.row.model_id, ID_CHARS)) for m in matches if m.outcome == "not_verified"]
    more = f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else ""
    unverified = ", ".join(ids[:SHOWN_IDS]) + more
    flagged = f" {counts['bad_value']} with a value that is not a score." if counts["bad_value"] else ""
    bad = f" {len(snapshot.bad)} rows could not be read." if snapshot.bad else ""
    stale = f" {plain_markdown(snapshot.problem)} since {_when(snapshot.tried_at)}." if snapshot.problem else ""
    return (
        f"Hub check, {where} (read {_when(snapshot.read_at)}, task {HUB_TASK}): {len(matches)} rows; "
        f"{counts['same']} verified here, same value; {counts['differs']} verified here, different value; "
        f"{counts['not_verified']} not verified here{': ' + unverified if unverified else ''}.{flagged}{bad}{stale}"
    )


def hub_check_lines(matches: Sequence[HubMatch], bad: Sequence[str] = ()) -> list[str]:
    """What `negt2ibench leaderboard hub-check` prints: one line per repo (its row by `pick_row`,
    the others listed), one per row that could not be read, then the counts. Print each through
    `names.terminal_text`: the Hub's strings are strangers'."""
    lines = []
    for match in matches:
        row = match.row
        pr = f" (open {row.pull_request_text()})" if row.in_pull_request else ""
        detail = ""
        if match.entry is not None:
            name = clip(match.entry.model_name, ID_CHARS)
            detail = f"; ours {match.ours:.1f}, entry {match.entry.submission_id[:8]} ({name})"
        value = f"{row.value:.1f} on the Hub" if row.value is not None else "on the Hub"
        lines.append(f"#{row.rank} {clip(row.model_id, ID_CHARS)}{pr}: {value}: {match.text()}{detail}")
        if match.others:
            shown = ", ".join(
                f"#{o.rank}" + (f" ({o.pull_request_text()})" if o.in_pull_request else "") for o in match.others
            )
            lines.append(
                f"  {len(match.others) + 1} rows name this repo; compared: #{row.rank} (a merged file before a pull "
                f"request, then the Hub's rank); not compared: {shown}"
            )
    lines += [f"bad row ({clip(problem, 200)}): skipped" for problem in bad]
    counts = _counts(matches)
    rows = len(matches) + sum(len(m.others) for m in matches)
    head = f"{len(matches)} Hub rows" if rows == len(matches) else f"{len(matches)} repos ({rows} Hub rows)"
    flagged = f", {counts['bad_value']} with a value that is not a score" if counts["bad_value"] else ""
    unread = f"; {len(bad)} rows could not be read" if bad else ""
    lines.append(
        f"{head}: {counts['same']} verified here with the same value, {counts['differs']} verified "
        f"here with another value, {counts['not_verified']} not verified here{flagged}{unread}"
    )
    return lines
