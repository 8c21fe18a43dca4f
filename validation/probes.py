"""Optional extra sections of the agreement report ("probes"), registered by other parts.

A probe looks at the same inputs as `agree` (human labels, every evaluator's checked verdicts
and computed agreement) and returns a JSON-ready dict, or None when it does not apply (say, no
pair of `pos` / `neg` judge runs was given). Non-empty results land in ``agreement.json`` under
``"probes": {name: result}``, and in ``agreement.md`` as a section when the probe has a
`markdown` renderer.

Register eagerly with the decorator, or lazily (nothing imported until `agree` runs) with a
``"module:attribute"`` target naming a `Probe`:

    @register_probe("negation", markdown=negation_markdown)
    def negation_probe(data: ProbeInput) -> dict | None: ...

    register_probe("negation", target="validation.negation_probe:NEGATION_PROBE")

The VLM negation probe of Table 10 (flip rate, complement error and called-correct, from a
judge's ``pos`` and ``neg`` runs: `judges.probe.negation_probe`) is registered that way at the
end of this module; `validation.negation_probe` picks the runs and imports the judges package
only when `agree` runs. So is NegVQA beside Tables 2 and 10 (`validation.negvqa_probe`, from the
records `agree --negvqa` passes in `ProbeInput.extra`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from negt2ibench.core.registry import Registry

from .labels import LabelSet
from .runs import EvaluatorRun


@dataclass(frozen=True)
class ProbeInput:
    """What a probe sees: the labels, the runs (by file order) and their computed agreement blocks, and
    the inputs some probes take beyond them, by name (`extra`: ``agree --negvqa FILE...`` gives the
    ``negvqa`` probe its judges' NegVQA records as {"negvqa": [judges.negvqa.summary.JudgeRecords]})."""

    labels: LabelSet
    runs: tuple[EvaluatorRun, ...]
    evaluators: Mapping[str, dict]
    resamples: int
    seed: int
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Probe:
    name: str
    compute: Callable[[ProbeInput], dict | None]
    markdown: Callable[[dict], str] | None = None  # the Markdown section for a result (heading included)


PROBES: Registry[Probe] = Registry("probe", kind=Probe)


def register_probe(
    name: str,
    compute: Callable[[ProbeInput], dict | None] | None = None,
    *,
    markdown: Callable[[dict], str] | None = None,
    target: str | None = None,
):
    """Register a probe under `name`: directly, as a decorator (no `compute`), or lazily (`target`).

    A second registration of a name raises ValueError (probes are global, so a silent
    overwrite would change a report behind its owner's back).
    """
    if name in PROBES:
        raise ValueError(f"a probe named {name!r} is already registered")
    if target is not None:
        PROBES.register(name, target)
        return None
    if compute is None:

        def decorate(function: Callable[[ProbeInput], dict | None]):
            PROBES.register(name, Probe(name, function, markdown))
            return function

        return decorate
    PROBES.register(name, Probe(name, compute, markdown))
    return compute


def unregister_probe(name: str) -> None:
    """Remove a probe (tests register temporary ones)."""
    PROBES.unregister(name)


def registered_probes() -> dict[str, Probe]:
    """Every registered probe, lazy ones imported now."""
    return {name: PROBES[name] for name in sorted(PROBES)}


def run_probes(data: ProbeInput) -> dict[str, dict]:
    """{name: result} for every probe that returns something."""
    results = {}
    for name, probe in registered_probes().items():
        result = probe.compute(data)
        if result:
            results[name] = result
    return results


def probe_markdown(name: str, result: dict) -> str | None:
    """The Markdown section of one probe's result, when it has a renderer."""
    probe = registered_probes().get(name)
    return probe.markdown(result) if probe is not None and probe.markdown is not None else None


# Table 10: a judge's pos and neg runs, when both are given (see validation.negation_probe).
register_probe("negation", target="validation.negation_probe:NEGATION_PROBE")
# NegVQA beside Tables 2 and 10, when `agree --negvqa FILE...` gives a judge's NegVQA records.
register_probe("negvqa", target="validation.negvqa_probe:NEGVQA_PROBE")
