"""Which evaluator a results file is, for the paper's tables: judges and their modes, the scorer.

A judge's records say ``evaluator = "<judge key>/<mode>"`` (mode whole, pos or neg); the
scorer's say ``"negt2ibench/<preset>"``. The paper's tables put one judge's three modes in one
row (Tables 2, 6) or one group of rows (Tables 7, 11, 12), so `evaluator_groups` gathers the
runs of `agree`'s report by judge. The scorer and any other evaluator has one mode: its single
run is its per-element figure. A judge given twice in one mode cannot be paired with its other
modes (which run belongs with which is not knowable): each of its runs is then its own group.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

MODES = ("whole", "pos", "neg")
SCORER = "negt2ibench"
SINGLE = ""  # the mode of an evaluator that has one
MODE_ROWS = {"whole": "whole prompt", "pos": "pos. per element", "neg": "neg. per element", SINGLE: "per element"}
Kind = Literal["scorer", "judge", "other"]
KIND_TITLES: dict[str, str] = {"scorer": "Detector-based", "judge": "VQA judges", "other": "Other evaluators"}


def split_evaluator(evaluator: str) -> tuple[str, str, Kind]:
    """(group key, mode, kind) of a record's `evaluator` field."""
    head, _, tail = evaluator.rpartition("/")
    if head == SCORER:
        return evaluator, SINGLE, "scorer"
    if head and tail in MODES:
        return head, tail, "judge"
    return evaluator, SINGLE, "other"


def display_name(key: str, kind: Kind) -> str:
    """How the paper names an evaluator: "NegT2IBench (ours)" for the current preset, a judge's
    registry display name ("Qwen3-VL-32B"), else the key itself."""
    if kind == "scorer":
        preset = key.partition("/")[2]
        return "NegT2IBench (ours)" if preset == "current" else f"NegT2IBench ({preset})"
    if kind == "judge":
        from judges.registry import REGISTRY

        if key in REGISTRY:
            return REGISTRY[key].display_name or key
    return key


@dataclass(frozen=True)
class EvaluatorGroup:
    """One evaluator of the paper's tables: a judge with its modes, or a one-mode evaluator."""

    key: str  # the judge key, or the whole evaluator name (what cost records are matched on)
    label: str
    kind: Kind
    runs: Mapping[str, str] = field(default_factory=dict)  # mode → the run's name in the report

    @property
    def per_element(self) -> str | None:
        """The run of the per-element figure: a judge's pos mode, the single run of the others."""
        return self.runs.get("pos" if self.kind == "judge" else SINGLE)

    def modes(self) -> tuple[str, ...]:
        """The modes shown for this group, in the paper's order."""
        return tuple(mode for mode in MODES if mode in self.runs) if self.kind == "judge" else (SINGLE,)

    def row_label(self, mode: str) -> str:
        """A run's label where every run has its own row (Tables 9, 13): "Qwen3-VL-32B, pos."."""
        return f"{self.label}, {mode}." if mode else self.label


def evaluator_groups(evaluators: Mapping[str, Mapping]) -> list[EvaluatorGroup]:
    """The report's runs (``report["evaluators"]``, by name, in file order) gathered by evaluator."""
    gathered: dict[str, dict] = {}
    repeated: set[str] = set()
    for name, block in evaluators.items():
        key, mode, kind = split_evaluator(block["evaluator"])
        entry = gathered.setdefault(key, {"kind": kind, "runs": {}})
        if mode in entry["runs"]:
            repeated.add(key)
        entry["runs"].setdefault(mode, []).append(name)
    groups = []
    for key, entry in gathered.items():
        label = display_name(key, entry["kind"])
        if key in repeated:  # not pairable: one group per run, named by the run
            groups += [
                EvaluatorGroup(name, f"{label} ({name})", entry["kind"], {mode: name})
                for mode, names in entry["runs"].items()
                for name in names
            ]
        else:
            runs = {mode: names[0] for mode, names in entry["runs"].items()}
            groups.append(EvaluatorGroup(key, label, entry["kind"], runs))
    return groups
