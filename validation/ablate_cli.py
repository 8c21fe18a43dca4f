"""`negt2ibench ablate`: the shell over `validation.ablate` (options, files, printing)."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_interval_options,
    add_no_progress_flag,
    add_prompts_option,
    add_weights_dir_option,
)

from .cli import _PROMPTS_HELP, _has_prompts, _prompts


def _ablate(args: argparse.Namespace) -> int:
    from evaluator.config import get_preset
    from evaluator.models.weights import require_weights

    from .annotations import read_annotations
    from .labels import build_labels

    configs = [get_preset(name) for name in dict.fromkeys(args.configs)]
    dataset = Path(args.images)
    source = args.prompts if args.prompts else (dataset if dataset.is_dir() and _has_prompts(dataset) else None)
    prompts = _prompts(source)
    labels = build_labels(read_annotations(args.annotations), prompts)
    labels.require_labels()  # bad input first (exit 1), then the weights (exit 2)
    for config in configs:  # every preset's weights, looked for on disk before torch loads
        require_weights(config, args.weights_dir)
    from evaluator import perception as perception_module

    from .ablate import run_ablation
    from .report import section_markdown

    def perception_for(config):
        return perception_module.ModelPerception(
            config, device=args.device, batch_size=args.batch_size, weights_dir=args.weights_dir
        )

    outcome = run_ablation(
        args.images,
        labels,
        configs,
        args.out,
        prompts=prompts,
        perception_for=perception_for,
        batch_size=args.batch_size,
        resamples=args.bootstrap,
        seed=args.seed,
        confidence=args.confidence,
        progress=not args.no_progress,
    )
    print(section_markdown(outcome.table))
    for group, count in outcome.observed.items():
        print(f"perception: {count} image(s) observed once for {group}")
    if labels.under_annotated:
        print(f"note: {len(labels.under_annotated)} annotated image(s) have fewer than 3 annotators and are not used")
    if outcome.missing:
        first = "/".join(map(str, outcome.missing[0][:2])) + f"#{outcome.missing[0][2]}"
        print(f"note: {len(outcome.missing)} labelled image(s) are not in {args.images} (first: {first}); not scored")
    print(f"wrote results/<config>.jsonl, agreement/ and ablation.md/.csv/.json to {args.out}")
    return 0


def register(subparsers: argparse._SubParsersAction) -> None:
    raw = argparse.RawDescriptionHelpFormatter
    from evaluator.config import PRESETS

    table17 = [f"c{number}" for number in range(1, 9)]
    ablate = subparsers.add_parser(
        "ablate",
        help="score the annotated images under each evaluator configuration and compare (paper Table 17)",
        description=textwrap.fill(
            "Score every image with three annotators under each configuration (default: Table 17's c1-c8) and "
            "write the ablation table: n, agreement and kappa with bootstrap intervals per configuration. "
            "Perception runs once per image for configurations that differ only in the rules' constants (once "
            "per detector x SAM pair for c1-c8); only the rules are re-run for each. Writes DIR/results/"
            "<config>.jsonl (resumable; `agree` can be rerun on them), DIR/agreement/ (the full `agree` report) "
            "and DIR/ablation.md / .csv / .json.",
            width=88,
        ),
        epilog="example:\n  negt2ibench ablate --images build/negt2ibench --annotations annotations.jsonl "
        "--configs c1 c2 c5 c6 --out ablation/",
        formatter_class=raw,
    )
    ablate.add_argument(
        "--images",
        required=True,
        metavar="DATASET",
        help="dataset folder with images/<split>-*.parquet (split = model key), or a Hub dataset repo id",
    )
    ablate.add_argument(
        "--annotations", required=True, metavar="FILE", help="annotations JSONL (from `annotations export`)"
    )
    ablate.add_argument(
        "--configs",
        nargs="+",
        choices=list(PRESETS),
        default=table17,
        metavar="PRESET",
        help=f"evaluator presets to compare (default: {' '.join(table17)}; also: "
        f"{', '.join(n for n in PRESETS if n not in table17)})",
    )
    ablate.add_argument("--out", required=True, metavar="DIR", help="folder for results/, agreement/ and ablation.*")
    add_device_option(ablate, "where the models run: auto, cpu, cuda, cuda:N or mps (default: auto)")
    add_batch_size_option(ablate, "images per model batch (default: 8)")
    add_weights_dir_option(ablate)
    add_interval_options(ablate)
    add_prompts_option(ablate, _PROMPTS_HELP.replace("default:", "default: DATASET's, else"), metavar="SRC")
    add_no_progress_flag(ablate, "no progress bars")
    ablate.set_defaults(handler=_ablate)
