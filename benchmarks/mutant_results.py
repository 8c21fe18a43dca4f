"""The generated pass's outcomes: saved and merged runs, the score, and its section of benchmarks/RESULTS.md.

A run is saved as JSON (`--save`); several saved runs merge (`--from a.json b.json`), a later run's
outcome of a mutant replacing an earlier one's (a rerun of the survivors after tests were added).
A mutant is known across runs by its `Site.key`: module, changed line's text, column, change and
its rank among mutants alike, not its line number (which moves when lines are added above it).

The section is written between `BEGIN` and `END` (replaced whole; appended when absent), so the
figure lives in one place and docs/contributing.md points at it instead of quoting it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

BEGIN = "<!-- mutants:begin -->"
END = "<!-- mutants:end -->"
STATUSES = ("killed", "timeout", "survived", "equivalent", "broken")


@dataclass(frozen=True)
class Site:
    """Where a generated mutant changes its module, and what it changes."""

    module: str
    line: int
    column: int
    text: str  # the changed line, stripped
    operator: str  # the family: compare, boolean, arithmetic, number, condition, builtin
    what: str  # the change in the report's words: `<= → <`, `condition negated`
    function: str  # the qualified name of the function or class around it ("" at module level)
    area: str | None = None  # the guarded area (mutant_modules.GUARDED) it belongs to
    rank: int = 0  # among the module's mutants of the same text, column and change

    @property
    def key(self) -> str:
        return f"{self.module}|{self.text}|{self.column}|{self.what}|{self.rank}"

    def describe(self) -> str:
        inside = f" ({self.function})" if self.function else ""
        return f"{self.module}:{self.line}{inside} {self.operator}: {self.what} in `{self.text[:90]}`"


@dataclass(frozen=True)
class Outcome:
    """A mutant's result: killed (a test failed, and passes without the mutant), timeout, survived,
    equivalent (listed, not run) or broken (the failing test fails without the mutant too)."""

    name: str
    status: str
    detail: str
    seconds: float
    site: Site | None = None


@dataclass
class Run:
    """One invocation's outcomes, with what it was asked (`selected`: the keys chosen) and where."""

    date: str
    commit: str
    options: str
    made: int  # mutants of the chosen modules, before sampling
    selected: list[str] = field(default_factory=list)
    outcomes: list[Outcome] = field(default_factory=list)


def save(run: Run, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(asdict(run), ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def load(path: Path) -> Run:
    raw = json.loads(path.read_text(encoding="utf-8"))
    outcomes = [Outcome(**{**o, "site": Site(**o["site"]) if o.get("site") else None}) for o in raw.pop("outcomes")]
    return Run(**raw, outcomes=outcomes)


def merged(runs: Sequence[Run]) -> tuple[list[Outcome], int]:
    """The outcomes of RUNS by mutant (a later run's replaces an earlier one's), and how many mutants
    some run selected but none ran (skipped at the time bound)."""
    by_key: dict[str, Outcome] = {}
    selected: dict[str, None] = {}
    for run in runs:
        selected.update(dict.fromkeys(run.selected))
        by_key.update({o.site.key if o.site else o.name: o for o in run.outcomes})
    return list(by_key.values()), sum(key not in by_key for key in selected)


def tally(outcomes: Iterable[Outcome]) -> Counter[str]:
    counts = Counter(o.status for o in outcomes)
    return Counter({status: counts[status] for status in STATUSES})


def survivor_share(counts: Counter[str]) -> float:
    """Survivors as a share of the mutants run that are not listed equivalents."""
    judged = sum(counts[s] for s in ("killed", "timeout", "survived", "broken"))
    return counts["survived"] / judged if judged else 0.0


def summary_line(counts: Counter[str], skipped: int) -> str:
    ran = sum(counts.values())
    return (
        f"{ran} mutants: {counts['killed']} killed, {counts['timeout']} timed out, {counts['survived']} survived, "
        f"{counts['equivalent']} equivalent (listed, not run), {counts['broken']} broken; {skipped} skipped at the "
        f"time bound; survivors {100 * survivor_share(counts):.1f}% of the mutants that are not listed equivalents"
    )


def _table(rows: dict[str, Counter[str]], first: str) -> list[str]:
    lines = [f"| {first} | mutants | killed | timed out | survived | equivalent | broken |", "|---|" + "---:|" * 6]
    for name, c in rows.items():
        lines.append(
            f"| {name} | {sum(c.values())} | {c['killed']} | {c['timeout']} | {c['survived']} | {c['equivalent']} "
            f"| {c['broken']} |"
        )
    return lines


def _grouped(outcomes: Sequence[Outcome], group) -> dict[str, Counter[str]]:
    names = sorted({group(o) for o in outcomes})
    return {name: tally(o for o in outcomes if group(o) == name) for name in names}


def section(runs: Sequence[Run]) -> str:
    """The RESULTS.md section of RUNS (merged): the counts, the guarded areas, the packages, each
    survivor, and each listed equivalent with its reason."""
    outcomes, skipped = merged(runs)
    counts = tally(outcomes)
    lines = [BEGIN, "## The mutation pass (`benchmarks/mutants.py --generated`)", ""]
    lines.append("Written by `benchmarks/mutants.py --write-results` from these runs (a later one's outcome")
    lines.append("of a mutant replaces an earlier one's):")
    lines.append("")
    lines += [
        f"- {run.date}, tree {run.commit}: `{run.options}` ({len(run.outcomes)} of {run.made} made)" for run in runs
    ]
    lines += ["", f"**{summary_line(counts, skipped)}.**", ""]
    guarded = [o for o in outcomes if o.site and o.site.area]
    lines += _table(_grouped(guarded, lambda o: o.site.area), "guarded area (every mutant chosen)") + [""]
    lines += _table(_grouped(outcomes, lambda o: o.site.module.split("/")[0] if o.site else "table"), "package")
    lines += ["", "### Survivors", ""]
    survivors = sorted((o for o in outcomes if o.status in ("survived", "timeout", "broken")), key=_order)
    lines += [f"- {o.status}: {o.site.describe() if o.site else o.name}" for o in survivors] or ["None."]
    lines += ["", "### Equivalent (listed in `benchmarks/mutant_equivalents.py`)", ""]
    equivalent = sorted((o for o in outcomes if o.status == "equivalent"), key=_order)
    lines += [f"- {o.site.describe() if o.site else o.name}: {o.detail}" for o in equivalent]
    lines += [] if equivalent else ["None."]
    return "\n".join([*lines, "", END])


def _order(outcome: Outcome) -> tuple[str, int]:
    return (outcome.site.module, outcome.site.line) if outcome.site else (outcome.name, 0)


def write_section(path: Path, text: str) -> None:
    """Put TEXT (a section from BEGIN to END) in the Markdown file PATH, in place of the one there."""
    current = path.read_text(encoding="utf-8") if path.exists() else ""
    start, end = current.find(BEGIN), current.find(END)
    if start >= 0 and end > start:
        updated = current[:start] + text + current[end + len(END) :]
    else:
        updated = current.rstrip("\n") + ("\n\n" if current else "") + text + "\n"
    path.write_text(updated, encoding="utf-8")
