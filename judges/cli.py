"""`negt2ibench judge`: VLM-judge baselines in the paper's three modes (Tables 2, 6, 8–10).

Heavy imports (torch, transformers) happen inside the handler, so `judge --list` and `--help`
stay fast and import no model library.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from negt2ibench.core.errors import UsageError
from negt2ibench.core.options import (
    add_batch_size_option,
    add_device_option,
    add_json_flag,
    add_limit_option,
    add_no_progress_flag,
    add_prompts_option,
    split_name,
)
from negt2ibench.jobs_cli import add_hf_job_options, run_on_hub, wants_hf_job


def add_download_flag(parser: argparse.ArgumentParser) -> None:
    """`--download`, as `judge` and `negvqa` take it: without it the judge's weights are read from local files only."""
    parser.add_argument(
        "--download",
        action="store_true",
        help="fetch the judge's weights from the Hub when they are not on this machine (needs internet access); "
        "without it only local files are read",
    )


def download_options(args: argparse.Namespace) -> dict[str, Any]:
    """The adapter's keyword for `--download` (only adapters that fetch weights take it)."""
    return {"download": True} if args.download else {}


MODE_CHOICES = ("whole", "pos", "neg", "all")
JUDGE_DEVICE_HELP = "auto, cpu, cuda, cuda:N or mps; auto picks cuda (each process its own GPU), then mps, then cpu"

DESCRIPTION = """\
Ask a vision-language model yes/no questions about generated images and write one result record
per image (the scorer's record shape: `agree` and `report` read it unchanged). P("yes") comes from
the next-token logits over the tokenizer's yes/no tokens ("yes", "Yes", " yes", ...), softmaxed
between the two sides. An element is satisfied when its probability is > 0.5; the image passes
when every element is; its score is the mean probability.

modes (--mode):
  whole  one question, the prompt itself:
           Does this image show "a photo of a red cup and a non-red bowl"? Answer yes or no.
  pos    one question per object and per statement, statements always asked affirmatively;
         a negated statement is satisfied by "no":
           Is there a cup in the image?   Is the cup red?   Is the backpack left of the fork?
  neg    as pos, but negated statements asked in negated form, satisfied by "yes":
           Is the cup not red?   Is the backpack not left of the fork?
  all    the three modes with one model load; --out judge.jsonl writes judge.whole.jsonl,
         judge.pos.jsonl and judge.neg.jsonl (questions shared by pos and neg are asked once)

Records: evaluator "KEY/MODE", score, passed, objects, statements (with a failure cause), and
questions (each element's question, p_yes and p_satisfied). Rerunning the same command resumes.
Under `accelerate launch -m negt2ibench judge ...` each process writes OUT.rank{i}.jsonl and the
main process merges them. The summary line gives the cost: model load (apart), s/question,
s/image, questions per image and peak memory (GPU: torch.cuda.max_memory_allocated; CPU: RSS);
the same summary is written beside the results as OUT.run.json (Table 2's costs in `agree`).
"""

EPILOG = """\
examples:
  negt2ibench judge --list
  negt2ibench judge --model qwen3_vl_8b --mode all --images build/negt2ibench --split sd_1_5 --out judge/qwen8b.jsonl
  negt2ibench judge --model internvl3_5_8b --mode neg --images out/sd_1_5 --out neg.jsonl --batch-size 16
  negt2ibench judge --model qwen3_vl_8b --mode pos --images annotation_sample.jsonl --out pos.jsonl
  negt2ibench judge --model-id Qwen/Qwen2-VL-2B-Instruct --mode pos --images out/sd_1_5 --out q2.jsonl

SRC is a folder of {prompt_id}_{sample_index}.png, a dataset folder holding images/{key}-*.parquet
(choose the split with --split), a Hub dataset repo id with --split, one image file, or an
annotation sample (.jsonl lines {"prompt_id", "model_key", "sample_index", "images": DATASET_DIR}).
The weights are read from the Hugging Face cache (or the --model-id folder) only: a judge that is not
there stops at once, saying so; --download lets transformers fetch it from the Hub first.
VQAScore (--model vqascore) needs the optional package t2v-metrics."""


def register(subparsers) -> None:
    judge = subparsers.add_parser(
        "judge",
        help="VLM-judge baselines (whole / pos / neg modes): result records, negation probe inputs, cost",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    judge.add_argument("--list", action="store_true", help="list the registered judges (key, hub id, parameters)")
    which = judge.add_mutually_exclusive_group()
    which.add_argument("--model", metavar="KEY", help="a registered judge (see --list)")
    which.add_argument("--model-id", metavar="HUB_ID", help="any transformers chat VLM (Hub id or local folder)")
    judge.add_argument(
        "--key", metavar="NAME", help="with --model-id: the judge name in records (default: from the id)"
    )
    judge.add_argument(
        "--revision", metavar="REV", default="main", help="with --model-id: Hub revision (default: main)"
    )
    judge.add_argument("--mode", choices=MODE_CHOICES, default="pos", help="question mode (default: pos); see above")
    judge.add_argument("--images", metavar="SRC", help="images to judge (see below)")
    judge.add_argument("--split", metavar="KEY", help="the images split (model key) of a dataset source")
    judge.add_argument("--prompt-id", metavar="ID", help="prompt of a single image file not named {prompt_id}_{n}.png")
    add_prompts_option(judge, "prompt records (dataset folder, prompts.jsonl or parquet); default: built-in")
    judge.add_argument("--out", metavar="FILE", help="results JSONL (with --mode all: FILE's stem + .MODE.jsonl)")
    judge.add_argument(
        "--model-key", type=split_name, metavar="KEY", help="model key in every record (default: the split or folder)"
    )
    add_batch_size_option(judge, "(image, question) pairs per forward pass (default: 8)")
    add_limit_option(judge, "judge at most the first N images of the source")
    add_device_option(judge, JUDGE_DEVICE_HELP, metavar="DEVICE")
    add_download_flag(judge)
    add_json_flag(judge, "also print the run summary (costs, counts) as JSON")
    add_no_progress_flag(judge)
    add_hf_job_options(judge, "judge")
    judge.set_defaults(handler=run_judge)


def _spec(args: argparse.Namespace):
    from .registry import chosen_spec

    return chosen_spec(args.model, model_id=args.model_id, custom_key=args.key, revision=args.revision, flag="--model")


def run_judge(args: argparse.Namespace) -> int:
    if args.list:
        from negt2ibench.core.table import to_markdown

        from .registry import registry_table

        print(to_markdown(registry_table(), caption=False, notes=False))
        return 0
    spec = _spec(args)
    missing = [flag for flag, value in (("--images", args.images), ("--out", args.out)) if not value]
    if missing:
        raise UsageError(f"judge needs {' and '.join(missing)} (see `negt2ibench judge --help`)")
    if wants_hf_job(args):
        return run_on_hub(args)

    from dataset_builder.loading import prompt_index

    from .registry import required_adapter_class
    from .sources import judge_items

    items = judge_items(args.images, split=args.split, prompt_id=args.prompt_id, model_key=args.model_key)
    prompts = prompt_index(args.prompts)
    judge_class = required_adapter_class(spec, download=args.download)
    adapter = judge_class(spec, device=args.device, batch_size=args.batch_size, **download_options(args))
    from .runner import judge_images

    summary = judge_images(
        items, prompts, adapter, out_path=args.out, mode=args.mode, limit=args.limit, progress=not args.no_progress
    )
    print(summary.line())
    if summary.error_reasons:
        print("errors: " + ", ".join(f"{reason} ×{count}" for reason, count in sorted(summary.error_reasons.items())))
    if args.json:
        print(json.dumps(summary.to_dict()))
    return 0
