"""Sub-commands `generate`, `import-images` and `merge-images`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from negt2ibench.core.errors import UsageError, UserError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_limit_option,
    add_prompts_option,
    git_revision,
    non_negative_number,
    positive_int,
    split_name,
)
from negt2ibench.jobs_cli import add_hf_job_options, run_on_hub, wants_hf_job

DEFAULT_NUM_IMAGES = SAMPLES_PER_PROMPT
DEFAULT_SHARD_SIZE = 128


def _add_selection(parser: argparse.ArgumentParser) -> None:
    from dataset_builder.vocabulary import CATEGORIES

    parser.add_argument(
        "--categories",
        nargs="+",
        metavar="CATEGORY",
        help=f"only these categories ({', '.join(CATEGORIES)}); default: all",
    )
    parser.add_argument(
        "--settings",
        nargs="+",
        metavar="SETTING",
        help="only these settings, e.g. pos1_neg0 pos0_neg1; default: all eight",
    )
    add_limit_option(parser, "only the first N selected prompts (corpus order)", at_least_one=True, metavar=None)
    add_prompts_option(
        parser,
        "prompts to use: a built dataset folder, prompts.jsonl or parquet "
        "(default: OUT's prompts if it is a built dataset, else the default corpus)",
    )


def register(subparsers) -> None:
    """Add `generate`, `import-images` and `merge-images` to the main parser's sub-commands."""
    _register_generate(subparsers)
    _register_import_images(subparsers)
    _register_merge_images(subparsers)


def _register_generate(subparsers) -> None:
    """`generate`: its parser, options and handler."""
    generate = subparsers.add_parser(
        "generate",
        help="generate one image split with a text-to-image model (resumable, multi-GPU)",
        description=(
            "Generate NUM_IMAGES images per prompt with one model and write them as the split KEY\n"
            "of the `images` config: DIR/images/KEY-rRANK-N.parquet (PNG bytes, seed, params).\n"
            "The seed of every image comes from (prompt_id, sample_index), so reruns give the same\n"
            "pixels. Run the same command again after an interruption and it resumes.\n"
            "Under `accelerate launch` (or torchrun) each process takes its share and writes its own\n"
            "shards; rank 0 checks completeness at the end and refreshes DIR/README.md (see merge-images)."
        ),
        epilog=(
            "examples:\n"
            "  negt2ibench generate --list\n"
            "  negt2ibench generate --model sd_1_5 --out data --batch-size 8\n"
            "  accelerate launch --multi_gpu --num_processes 8 -m negt2ibench generate \\\n"
            "      --model flux_2_klein_9b --out data --batch-size 4\n"
            "  negt2ibench generate --model-id stabilityai/sdxl-turbo --key sdxl_turbo --steps 1 --out data\n"
            "  negt2ibench generate --benchmark geneval --model sd_1_5 --out geneval/sd_1_5   # GenEval's layout"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_model_options(generate)
    _add_output_options(generate)
    _add_benchmark_options(generate)
    _add_selection(generate)
    add_hf_job_options(generate, "generate")
    generate.set_defaults(handler=run_generate)


def _add_model_options(generate: argparse.ArgumentParser) -> None:
    """`generate`'s choice of model: a registry key, or any diffusers pipeline and its settings."""
    generate.add_argument("--list", action="store_true", help="print the model registry and exit")
    generate.add_argument("--model", metavar="KEY", help="registry key (see --list)")
    generate.add_argument(
        "--model-id", metavar="HUB_ID", help="any other diffusers pipeline (hub id or local folder); needs --key"
    )
    generate.add_argument("--key", type=split_name, metavar="NAME", help="split name for --model-id ([a-z0-9_]+)")
    generate.add_argument(
        "--steps", type=positive_int, help="with --model-id: inference steps (default: the pipeline's)"
    )
    generate.add_argument(
        "--guidance", type=non_negative_number, help="with --model-id: guidance scale (default: the pipeline's)"
    )
    generate.add_argument(
        "--resolution",
        type=positive_int,
        metavar="PX",
        help="with --model-id: square image size (default: the pipeline's)",
    )
    generate.add_argument(
        "--revision",
        type=git_revision,
        metavar="REV",
        help="the model repo's branch, tag or commit (default: its main branch); the commit loaded is recorded "
        "in every image's params, and the leaderboard regenerates a sample of a submission's images with it",
    )


def _add_output_options(generate: argparse.ArgumentParser) -> None:
    """`generate`'s output and how it runs: the folder, images per prompt, batches, device, shards."""
    generate.add_argument("--out", type=Path, metavar="DIR", help="dataset folder (images go to DIR/images/)")
    generate.add_argument(
        "--num-images",
        type=positive_int,
        default=DEFAULT_NUM_IMAGES,
        help=f"images per prompt (default {DEFAULT_NUM_IMAGES}, as in the paper)",
    )
    add_batch_size_option(
        generate,
        "prompts per pipeline call (default 1; halved automatically on out-of-memory)",
        default=1,
        metavar=None,
    )
    add_device_option(generate, "auto, cpu, cuda, cuda:N or mps (default auto: this process's GPU, else mps, else cpu)")
    generate.add_argument(
        "--shard-size",
        type=positive_int,
        default=DEFAULT_SHARD_SIZE,
        help=f"images per parquet shard (default {DEFAULT_SHARD_SIZE}); an interrupted run "
        f"loses at most one unflushed shard",
    )
    generate.add_argument("--no-merge", action="store_true", help="skip the completeness check at the end")


def _add_benchmark_options(generate: argparse.ArgumentParser) -> None:
    """`generate`'s prompts (this benchmark's or GenEval's), progress and downloads."""
    generate.add_argument(
        "--benchmark",
        choices=("negt2ibench", "geneval"),
        default="negt2ibench",
        help="whose prompts: this benchmark's 4,800 (default) or GenEval's 553 (docs/geneval.md)",
    )
    generate.add_argument(
        "--layout",
        choices=("geneval", "dataset"),
        default="geneval",
        help="with --benchmark geneval: GenEval's folders OUT/00000/metadata.jsonl + samples/0000.png (default), "
        "or the split geneval_KEY of the dataset folder OUT",
    )
    generate.add_argument(
        "--metadata", metavar="FILE", help="with --benchmark geneval: another evaluation_metadata.jsonl"
    )
    generate.add_argument("--quiet", action="store_true", help="no progress bar")
    generate.add_argument(
        "--download",
        action="store_true",
        help="fetch the model from the Hub when it is not on this machine (needs internet access; gated models "
        "need `hf auth login`); without it only local files are read and a missing model stops at once",
    )


def _register_import_images(subparsers) -> None:
    """`import-images`: its parser, options and handler."""
    importer = subparsers.add_parser(
        "import-images",
        help="add images made elsewhere ({prompt_id}_{sample_index}.png) as a split",
        description=(
            "Validate a folder of {prompt_id}_{sample_index}.png files (every id known, every file a "
            "decodable PNG) and write them as the split KEY of DIR's images config. Any bad file stops the "
            "import before anything is written, unless --skip-bad. Gaps (expected images absent) are reported."
        ),
    )
    importer.add_argument("--key", required=True, type=split_name, metavar="NAME", help="split name ([a-z0-9_]+)")
    importer.add_argument("--dir", required=True, type=Path, metavar="FOLDER", help="folder holding the PNG files")
    importer.add_argument("--out", required=True, type=Path, metavar="DIR", help="dataset folder")
    importer.add_argument("--model-id", metavar="ID", help="hub id of the model that made them (default: KEY)")
    importer.add_argument(
        "--num-images",
        type=positive_int,
        help=f"expected images per prompt for the gap report (default {DEFAULT_NUM_IMAGES}, the benchmark's, or the "
        "largest index + 1 when larger)",
    )
    importer.add_argument("--skip-bad", action="store_true", help="import the valid files even if others are bad")
    add_prompts_option(importer, "prompts the ids refer to (default: OUT's prompts, else the default corpus)")
    importer.set_defaults(handler=run_import)


def _register_merge_images(subparsers) -> None:
    """`merge-images`: its parser, options and handler."""
    merge = subparsers.add_parser(
        "merge-images",
        help="check an image split for completeness and duplicates; refresh the dataset card",
        description=(
            "After a (multi-process) generate run: check that split KEY holds every selected prompt "
            "× NUM_IMAGES exactly once, list what is missing, and re-render DIR/README.md so its "
            "`images` config lists the split. Exit code 1 when images are missing or duplicated."
        ),
    )
    merge.add_argument("--dir", required=True, type=Path, metavar="DIR", help="dataset folder")
    merge.add_argument("--key", required=True, type=split_name, metavar="KEY", help="split to check")
    merge.add_argument(
        "--num-images",
        type=positive_int,
        default=DEFAULT_NUM_IMAGES,
        help=f"expected images per prompt (default {DEFAULT_NUM_IMAGES})",
    )
    merge.add_argument(
        "--drop-duplicates", action="store_true", help="rewrite shards keeping the first copy of each duplicated image"
    )
    _add_selection(merge)
    merge.set_defaults(handler=run_merge)


def _spec_from_args(args):
    """The model to run; wrong or conflicting options are `UsageError`s (exit 2)."""
    from .registry import custom_spec, get_spec

    if args.model and args.model_id:
        raise UsageError("pass either --model KEY or --model-id HUB_ID --key NAME, not both")
    if args.model_id:
        if not args.key:
            raise UsageError("--model-id needs --key NAME (the split name, [a-z0-9_]+)")
        size = args.resolution
        return custom_spec(
            args.model_id,
            args.key,
            steps=args.steps,
            guidance=args.guidance,
            height=size,
            width=size,
            revision=args.revision,
        )
    if not args.model:
        raise UsageError("pass --model KEY (see `negt2ibench generate --list`) or --model-id HUB_ID --key NAME")
    if args.key and args.key != args.model:
        raise UsageError("--key is only for --model-id; registry models write the split named by --model")
    if args.steps is not None or args.guidance is not None or args.resolution is not None:
        raise UsageError("--steps/--guidance/--resolution are only for --model-id; registry models use Table 18")
    spec = get_spec(args.model)
    return replace(spec, revision=args.revision) if args.revision else spec


def run_generate(args) -> int:
    from generation.backends import load_generator

    from .merge import finish_split
    from .registry import registry_lines
    from .work import plan_work, prompts_for, select_prompts

    if args.list:
        print("\n".join(registry_lines()))
        return 0
    if wants_hf_job(args):
        return run_on_hub(args)
    spec = _spec_from_args(args)
    if spec.backend == "unsupported":
        load_generator(spec, "cpu")  # raises the clear "use import-images" message
    if args.out is None:
        raise UsageError("--out DIR is required (the dataset folder)")
    if args.benchmark == "geneval":
        return _run_geneval(args, spec)
    if args.metadata:
        raise UsageError("--metadata is for --benchmark geneval")
    prompts = select_prompts(prompts_for(args.out, args.prompts), args.categories, args.settings, args.limit)
    work = plan_work(prompts, args.num_images)
    summary, launch = _generate(args, spec, work)
    rate = summary.generated / summary.seconds if summary.seconds > 0 else 0.0
    print(
        f"rank {summary.rank}: {summary.generated} generated ({rate:.2f} img/s), {summary.skipped} already done, "
        f"{summary.nsfw_flagged} flagged NSFW, {len(summary.shards)} shards written",
        file=sys.stderr,
    )
    if not args.no_merge:
        finished = finish_split(args.out, spec.key, prompts, args.num_images, launch)
        if finished is not None:  # the main process
            report, card = finished
            print("\n".join(report.summary_lines()))
            print(card)
    return 0


def _generate(args, spec, work, store=None):
    """The run both `generate` paths share: this process's device under the launcher, the model
    loaded on it, then its share of `work` (into `store`, or the dataset's shards); (summary, launch)."""
    from generation.backends import load_generator, require_weights

    require_weights(spec, download=args.download)  # a look at the disk, before torch and the launcher
    from negt2ibench.core.launch import Launch

    from .runner import generate_images, resolve_device

    launch = Launch.detect(cpu=args.device == "cpu")
    device = resolve_device(args.device, launch)
    generator = load_generator(spec, device, download=args.download)
    summary = generate_images(
        generator,
        spec,
        work,
        args.out,
        rank=launch,
        batch_size=args.batch_size,
        shard_size=args.shard_size,  # used when no store is given
        device=device,
        progress=not args.quiet,
        store=store,
    )
    return summary, launch


def _run_geneval(args, spec) -> int:
    """`generate --benchmark geneval`: GenEval's prompts, in its layout or as the split geneval_KEY."""
    from dataset_builder.layout import GENEVAL_SPLIT_PREFIX
    from evaluator.geneval.prompts import load_geneval_prompts

    from .geneval_layout import GenEvalFolderStore, geneval_completeness, plan_geneval_work
    from .merge import refresh_card
    from .runner import ShardStore
    from .shards import check_completeness

    if args.categories or args.settings or args.prompts:
        raise UsageError(
            "--categories, --settings and --prompts are for this benchmark's prompts; GenEval has --metadata"
        )
    prompts = load_geneval_prompts(args.metadata)[: args.limit]
    work = plan_geneval_work(prompts, args.num_images)
    split = f"{GENEVAL_SPLIT_PREFIX}{spec.key}"
    store = (
        GenEvalFolderStore(args.out, prompts)
        if args.layout == "geneval"
        else ShardStore(args.out, split, args.shard_size)
    )
    summary, launch = _generate(args, spec, work, store)
    print(
        f"rank {summary.rank}: {summary.generated} generated, {summary.skipped} already done, "
        f"{summary.nsfw_flagged} flagged NSFW",
        file=sys.stderr,
    )
    if not args.no_merge:

        def finish() -> list[str]:
            if args.layout == "geneval":
                return geneval_completeness(args.out, prompts, args.num_images)
            expected = [(item.prompt_id, item.sample_index) for item in work]
            return [*check_completeness(args.out, split, expected).summary_lines(), refresh_card(args.out)]

        lines = launch.on_main(finish)
        if lines is not None:
            print("\n".join(lines))
    return 0


def run_import(args) -> int:
    from .importer import import_images
    from .merge import refresh_card
    from .work import prompts_for

    prompts = prompts_for(args.out, args.prompts)
    report = import_images(
        args.key,
        args.dir,
        args.out,
        prompts,
        model_id=args.model_id,
        num_images=args.num_images,
        skip_bad=args.skip_bad,
    )
    print("\n".join(report.summary_lines()))
    print(refresh_card(args.out))
    return 0


def run_merge(args) -> int:
    from dataset_builder.layout import images_dir, split_files

    from .merge import merge_split, refresh_card
    from .work import prompts_for, select_prompts

    if not split_files(args.dir, args.key):
        raise UserError(f"no shards of split {args.key!r} in {images_dir(args.dir)}")
    prompts = select_prompts(prompts_for(args.dir, args.prompts), args.categories, args.settings, args.limit)
    report = merge_split(args.dir, args.key, prompts, args.num_images, remove_duplicates=args.drop_duplicates)
    print("\n".join(report.summary_lines()))
    print(refresh_card(args.dir))
    return 0 if report.complete else 1
