"""`negt2ibench`: one CLI whose sub-commands front every part of the project.

Each part registers its own sub-commands (``register(subparsers)`` in ``<part>/cli.py``);
this module only assembles them and turns known errors into one line and an exit code.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import warnings

from . import __version__
from .core.errors import NegT2IError

# Parts that contribute sub-commands, in the order `--help` lists them.
COMMAND_MODULES = (
    "dataset_builder.cli",
    "generation.cli",
    "evaluator.cli",
    "evaluator.report_cli",
    "evaluator.eval_results_cli",
    "evaluator.geneval.cli",
    "judges.cli",
    "judges.negvqa.cli",
    "validation.cli",
    "validation.ablate_cli",
    "space.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="negt2ibench",
        description=(
            "NegT2IBench: build the 4,800 prompts, generate images, score them with the "
            "detector-based evaluator, report, and serve the Space."
        ),
        epilog="Run `negt2ibench COMMAND --help` for the options of one command.",
    )
    parser.add_argument("--version", action="version", version=f"negt2ibench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:  # part not written yet
                continue
            raise
        module.register(subparsers)
    return parser


# The extra of pyproject's [project.optional-dependencies] that brings each optional library: a
# wheel installed without it answers a command that needs one with the pip line, not a traceback.
EXTRA_OF_MODULE = {
    **dict.fromkeys(
        ["torch", "torchvision", "transformers", "accelerate", "rfdetr", "supervision", "requests", "safetensors"],
        "models",
    ),
    **dict.fromkeys(["diffusers", "sentencepiece", "skimage", "cv2"], "models"),
    "bitsandbytes": "gpu",
    **dict.fromkeys(["gradio", "spaces", "confusable_homoglyphs"], "space"),
}


def _quiet_library_noise() -> None:
    """Hide start-up chatter that users cannot act on (it buries our one-line errors)."""
    # bitsandbytes (4-bit FLUX.2-dev) looks for an optional CPU kernel package on import.
    logging.getLogger("bitsandbytes").setLevel(logging.ERROR)
    # rfdetr calls torch.jit.script, deprecated in this torch; harmless for inference.
    warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.*", category=FutureWarning)


def main(argv: list[str] | None = None) -> int:
    _quiet_library_noise()
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 0
    try:
        result = args.handler(args)
    except NegT2IError as error:
        print(f"error: {error.one_line()}", file=sys.stderr)
        return error.exit_code
    except ModuleNotFoundError as error:
        extra = EXTRA_OF_MODULE.get((error.name or "").split(".")[0])
        if extra is None or os.environ.get("NEGT2I_DEBUG"):
            raise
        print(
            f"error: this command needs {error.name}, which is not installed: pip install 'negt2ibench[{extra}]'",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("interrupted: finished work is kept; run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - last resort: one line unless debugging
        if os.environ.get("NEGT2I_DEBUG"):
            raise
        print(f"error: {type(error).__name__}: {error} (set NEGT2I_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
    if argv is None and getattr(args, "exit_at_once", False):
        _exit_at_once(int(result or 0))
    return int(result or 0)


def _exit_at_once(code: int) -> None:
    """End the process now, without freeing its objects one by one (as mypy's `--fast-exit` does): a
    command that holds millions of records to its end (`report`: 211,200 results, 0.8 s to free)
    sets `exit_at_once` on its parser. Only for a command run as the program itself (`main()` with
    no ARGV): its files are closed, its output flushed here, and it has no work left at exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())
