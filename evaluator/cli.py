"""`negt2ibench score`, `explain`, `download-models` and `selftest`: the evaluator's commands.

Heavy imports (torch, the models) happen inside the handlers so `--help` stays fast.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from dataset_builder.grammar import GRAMMAR_HELP
from evaluator.config import PRESET_HELP, PRESETS
from evaluator.geneval.config import PRESETS as GENEVAL_PRESETS
from negt2ibench.core.errors import UserError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_json_flag,
    add_limit_option,
    add_no_progress_flag,
    add_num_workers_option,
    add_prompts_option,
    add_weights_dir_option,
    split_name,
)
from negt2ibench.jobs_cli import add_hf_job_options, run_on_hub, wants_hf_job

PRESET_NAMES = tuple(PRESETS)
GENEVAL_PRESET_NAMES = tuple(GENEVAL_PRESETS)


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--preset",
        choices=PRESET_NAMES,
        default="current",
        metavar="PRESET",
        help="scorer configuration (default: current): "
        + "; ".join(f"{name}: {text}" for name, text in PRESET_HELP.items()),
    )
    _add_device_options(parser)


def _add_device_options(parser: argparse.ArgumentParser) -> None:
    """--device and --weights-dir: where the models run and where their weights are."""
    add_device_option(
        parser,
        "where the models run: auto, cpu, cuda, cuda:N or mps; auto picks cuda, then mps, then cpu (default: auto)",
    )
    add_weights_dir_option(
        parser,
        "folder filled by `negt2ibench download-models --dir DIR` (default: the Hugging Face cache and $RF_HOME)",
    )


def register(subparsers) -> None:
    """Add `score`, `explain`, `download-models` and `selftest` to the main parser's sub-commands."""
    _register_score(subparsers)
    _register_explain(subparsers)
    _register_download_models(subparsers)
    _register_selftest(subparsers)


def _register_score(subparsers) -> None:
    """`score`: its parser, options and handler."""
    score = subparsers.add_parser(
        "score",
        help="score images against their prompts (writes result records as JSONL, resumable)",
        description=(
            "Score generated images with the detector-based evaluator and append one result record per image to "
            "--out (JSONL). Images already in --out are skipped, so rerunning the same command resumes. Bad images "
            "and unknown prompt ids become error rows; the run goes on; files of a folder not named "
            "{prompt_id}_{sample_index}.png are listed, not scored. --out is checked before any model loads "
            "(a folder, or a file of another evaluator config, is refused). Under `accelerate launch -m "
            "negt2ibench score ...` each process writes OUT.rank{i}.jsonl and the main process merges them."
        ),
        epilog=(
            "examples:\n"
            "  negt2ibench score --images out/sd_1_5 --out results/sd_1_5.jsonl\n"
            "  negt2ibench score --images data/ --split sd_1_5 --out results/sd_1_5.jsonl --batch-size 16\n"
            "  negt2ibench score --images user/negt2ibench --split flux_1_dev --out flux.jsonl\n"
            "  negt2ibench score --images cat.png --prompt-id color_pos1_neg0_000 --out one.jsonl\n"
            "  negt2ibench score --images user/negt2ibench --split flux_1_dev --out flux.jsonl \\\n"
            "      --hf-job l4x1 --push-to user/negt2ibench-results    # on the Hub's GPUs (docs/hub-jobs.md)"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_score_options(score)
    _add_model_options(score)
    add_hf_job_options(score, "score")
    score.set_defaults(handler=run_score)


def _add_score_options(score: argparse.ArgumentParser) -> None:
    """`score`'s images, prompts, output and how the work is batched and shown."""
    score.add_argument(
        "--images",
        required=True,
        metavar="SRC",
        help="a folder of {prompt_id}_{sample_index}.png, a dataset folder holding "
        "images/{key}-*.parquet, a Hub dataset repo id, or one image file",
    )
    score.add_argument("--split", metavar="KEY", help="the images split (model key) of a dataset source")
    score.add_argument(
        "--prompt-id",
        metavar="ID",
        help="prompt of a single image file whose name is not {prompt_id}_{sample_index}.png",
    )
    add_prompts_option(score, "prompt records (dataset folder, prompts.jsonl or parquet); default: the built-in corpus")
    score.add_argument("--out", required=True, metavar="FILE", help="results JSONL to append to (created if missing)")
    score.add_argument(
        "--model-key",
        type=split_name,
        metavar="KEY",
        help="model key written in every record (default: the split, the folder name, or 'upload')",
    )
    add_batch_size_option(score, "images per model batch (default: 8)")
    add_limit_option(score, "score at most the first N images of the source")
    add_num_workers_option(
        score,
        "processes that decode (and on the CPU preprocess) images while the models run; under a launcher, "
        "per process. 0 decodes in the scoring process; the records are the same with any N "
        "(default: from the CPU count, at most 8; 0 with a single CPU)",
    )
    add_no_progress_flag(score)


def _register_explain(subparsers) -> None:
    """`explain`: its parser, options and handler."""
    explain = subparsers.add_parser(
        "explain",
        help="score one image and show why: statement table and an annotated PNG",
        description="Score one image, print one row per statement (verdict, cause, what was measured) and write "
        "the image with masks, boxes and 'name confidence' labels drawn on it.",
        epilog="examples:\n"
        "  negt2ibench explain cup.png --prompt-id color_pos1_neg1_004\n"
        "  negt2ibench explain cup.png --prompt 'a photo of a red cup and a non-red bowl' --out why.png\n"
        "\n--prompt TEXT: " + GRAMMAR_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    explain.add_argument("image", metavar="IMAGE", help="the image file to score")
    which = explain.add_mutually_exclusive_group(required=True)
    which.add_argument("--prompt-id", metavar="ID", help="a benchmark prompt id, e.g. depth_pos1_neg1_012")
    which.add_argument("--prompt-json", metavar="FILE", help="a prompt record as JSON")
    which.add_argument(
        "--prompt", metavar="TEXT", help="prompt text in the benchmark's grammar (parsed into statements)"
    )
    add_prompts_option(explain, "prompt records for --prompt-id (default: built-in corpus)")
    explain.add_argument(
        "--out", metavar="PNG", help="annotated image path (default: IMAGE_explained.png next to IMAGE)"
    )
    add_json_flag(explain, "also print the result record as JSON")
    _add_model_options(explain)
    explain.set_defaults(handler=run_explain)


def _register_download_models(subparsers) -> None:
    """`download-models`: its parser, options and handler."""
    download = subparsers.add_parser(
        "download-models",
        help="fetch every model weight the evaluator needs, for offline use later; --check loads them offline",
        description=(
            "Download the files the evaluator's loaders read, with their sizes: RF-DETR Seg XL (rfdetr's own\n"
            "storage) and the JSON configs and safetensors weights of SAM 2.1, SigLIP 2 and Depth-Anything V2\n"
            "(Hugging Face Hub); then print the environment variables that make later runs offline.\n"
            "--check then loads each model offline and says which is missing or broken\n"
            "(exit 0: every model loads; 2: one is missing; 1: one is broken).\n"
            "Afterwards run `negt2ibench selftest` once: the models on real photographs, expected vs measured."
        ),
        epilog="examples:\n"
        "  negt2ibench download-models\n"
        "  negt2ibench download-models --dir /data/negt2i-weights --check\n"
        "  negt2ibench download-models --check-only        # offline: is everything here and loadable?",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    download.add_argument(
        "--dir",
        metavar="DIR",
        help="put everything under DIR (DIR/hub for Hugging Face, DIR/rfdetr for RF-DETR); "
        "default: the Hugging Face cache and $RF_HOME",
    )
    download.add_argument(
        "--preset",
        choices=PRESET_NAMES + GENEVAL_PRESET_NAMES,
        default="current",
        metavar="PRESET",
        help="download the models of this preset (default: current, which uses all four; c1-c4 use "
        f"Mask R-CNN instead of RF-DETR; geneval: Mask2Former + CLIP for `negt2ibench geneval score`, "
        f"geneval_rfdetr(_sam): RF-DETR (+ SAM 2.1) + CLIP): {', '.join(PRESET_NAMES + GENEVAL_PRESET_NAMES)}",
    )
    checking = download.add_mutually_exclusive_group()
    checking.add_argument(
        "--check", action="store_true", help="after downloading, load each model offline and report which is not usable"
    )
    checking.add_argument(
        "--check-only", action="store_true", help="download nothing: only load each model offline and report"
    )
    download.set_defaults(handler=run_download_models)


def _register_selftest(subparsers) -> None:
    """Add `negt2ibench selftest` (the checks: `evaluator.selftest`)."""
    parser = subparsers.add_parser(
        "selftest",
        help="run the real models on real photographs and compare what they see with what is known",
        description=(
            "Run RF-DETR Seg XL, SAM 2.1, SigLIP 2 and Depth-Anything V2 through the evaluator on photographs\n"
            "shipped with scikit-image (a cat, a red cup, a red motorcycle with stereo ground-truth depth) and\n"
            "print expected vs measured:\n"
            "  - each object detected at the paper's thresholds, with a plausible box and a mask inside it;\n"
            "  - 'a photo of a red cup' and 'a photo of a red motorcycle' pass, 'a photo of a non-red\n"
            "    motorcycle' fails because the forbidden red was seen;\n"
            "  - the predicted disparity rank-correlates with the stereo ground truth (larger = nearer).\n"
            "Run it once after `negt2ibench download-models`.\n"
            "Exit 0: every check holds; 1: a check fails; 2: weights are missing."
        ),
        epilog=(
            "examples:\n  negt2ibench selftest\n  negt2ibench selftest --device cuda --weights-dir /data/negt2i-weights"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_device_options(parser)
    parser.set_defaults(handler=run_selftest)


def run_selftest(args: argparse.Namespace) -> int:
    from evaluator.selftest import format_checks, run_checks
    from negt2ibench.api import Evaluator

    evaluator = Evaluator("current", device=args.device, weights_dir=args.weights_dir, batch_size=1)
    evaluator.require_weights()  # every model, looked for on disk before the photographs and torch load
    checks = run_checks(evaluator)
    print(format_checks(checks))
    failed = [check.name for check in checks if not check.passed]
    if failed:
        print(f"\nselftest: {len(failed)} of {len(checks)} checks FAIL ({'; '.join(failed)})")
        return 1
    print(f"\nselftest: all {len(checks)} checks hold")
    return 0


def run_score(args: argparse.Namespace) -> int:
    from negt2ibench.api import Evaluator

    if wants_hf_job(args):
        return run_on_hub(args)
    evaluator = Evaluator(
        args.preset, device=args.device, weights_dir=args.weights_dir, batch_size=args.batch_size, prompts=args.prompts
    )
    summary = evaluator.score_source(
        args.images,
        out=args.out,
        model_key=args.model_key,
        split=args.split,
        prompt_id=args.prompt_id,
        limit=args.limit,
        progress=not args.no_progress,
        num_workers=args.num_workers,
    )
    if summary.skipped_line():
        print(summary.skipped_line())
    print(summary.line())
    if summary.error_reasons:
        print("errors: " + ", ".join(f"{reason} ×{count}" for reason, count in sorted(summary.error_reasons.items())))
    return 0


def _explain_prompt(args: argparse.Namespace, evaluator):
    from dataset_builder.records import PromptRecord

    if args.prompt_json:
        path = Path(args.prompt_json)
        try:
            return PromptRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            raise UserError(f"no prompt JSON at {path}") from None
        except ValueError as error:
            raise UserError(f"{path} is not a prompt record: {str(error).splitlines()[0]}") from None
    return evaluator.prompt(args.prompt or args.prompt_id)  # `negt2ibench.api.resolve_prompt`


def run_explain(args: argparse.Namespace) -> int:
    from evaluator.images import load_image
    from negt2ibench.api import Evaluator

    evaluator = Evaluator(
        args.preset, device=args.device, weights_dir=args.weights_dir, batch_size=1, prompts=args.prompts
    )
    prompt = _explain_prompt(args, evaluator)
    image = load_image(args.image)
    output = evaluator.score(image, prompt)
    from evaluator.annotate import annotate, format_table, statement_table  # after the weights were found

    record, observation = output.record, output.observation
    print(f"prompt ({prompt.prompt_id}): {prompt.prompt}")
    objects = ", ".join(f"{o.name} {f'{o.confidence:.2f}' if o.present else 'absent'}" for o in record.objects)
    print(f"objects: {objects}")
    print(format_table(statement_table(prompt, record)))
    print(f"image {'PASSED' if record.passed else 'FAILED'}")
    out = Path(args.out) if args.out else Path(args.image).with_name(Path(args.image).stem + "_explained.png")
    out.parent.mkdir(parents=True, exist_ok=True)
    annotate(image, observation, record).save(out, format="PNG")
    print(f"annotated image → {out}")
    if args.json:
        print(record.model_dump_json())
    return 0


def run_download_models(args: argparse.Namespace) -> int:
    from evaluator.config import get_preset
    from evaluator.models import weights
    from evaluator.models.weights import detector_weights_path, weights_layout

    config = GENEVAL_PRESETS[args.preset] if args.preset in GENEVAL_PRESETS else get_preset(args.preset)
    if not args.check_only:
        weights.download(config, args.dir, echo=lambda line: print(line, flush=True))
        print("\nall weights are here. For offline runs set:")
        if args.dir:
            print(f"  export HF_HUB_CACHE={weights_layout(args.dir)[0]}")
        kinds = {model.kind for model in weights.preset_models(config)}
        if "rfdetr" in kinds:
            print(f"  export RF_HOME={detector_weights_path(config, args.dir).parent}")
        if "torchvision" in kinds:
            checkpoint = weights.torchvision_weights_path(get_preset(args.preset), args.dir)  # HOME/hub/checkpoints/
            print(f"  export TORCH_HOME={checkpoint.parents[2]}")
        print("  export HF_HUB_OFFLINE=1")
        if args.dir:
            print(f"(or pass --weights-dir {args.dir} to score / explain / selftest)")
        if args.preset not in GENEVAL_PRESETS:
            print("then run `negt2ibench selftest` once: the models on real photographs, expected vs measured")
    if not (args.check or args.check_only):
        return 0
    print(f"\nloading each model of preset {config.name!r} offline ...", flush=True)
    results = weights.check(config, args.dir)
    print("\n".join(weights.check_lines(results)))
    return weights.check_exit_code(results)
