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
    "negt2ibench.reward_cli",
    "judges.cli",
    "judges.negvqa.cli",
    "validation.cli",
    "validation.ablate_cli",
    "validation.examples_cli",
    "space.cli",
    "leaderboard.cli",
    "negt2ibench.jobs_cli",
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
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:  # part not written yet
                continue
            raise
        module.register(subparsers)
    _add_verbose(subparsers)
    return parser


VERBOSE_HELP = "show the libraries' logs, warnings and progress bars (hidden by default)"


def _add_verbose(subparsers: argparse._SubParsersAction) -> None:
    """`--verbose` after any command too (`negt2ibench score ... --verbose`), nested ones included.
    SUPPRESS: a command's parser leaves the main parser's value alone unless given there."""
    for command in dict.fromkeys(subparsers.choices.values()):  # aliases share a parser
        command.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
        for action in command._actions:
            if isinstance(action, argparse._SubParsersAction):
                _add_verbose(action)


# The extra of pyproject's [project.optional-dependencies] that brings each optional library: a
# wheel installed without it answers a command that needs one with the pip line, not a traceback.
EXTRA_OF_MODULE = {
    **dict.fromkeys(
        ["torch", "torchvision", "transformers", "accelerate", "rfdetr", "supervision", "requests", "safetensors"],
        "models",
    ),
    **dict.fromkeys(["diffusers", "sentencepiece", "skimage", "cv2"], "models"),
    "bitsandbytes": "gpu",
    **dict.fromkeys(["gradio", "spaces"], "space"),
    "confusable_homoglyphs": "leaderboard",
    **dict.fromkeys(["flask", "gunicorn"], "reward"),
}


# Loggers of the libraries under the commands; below ERROR they only say what the user did not ask
# about ("Downloading pretrained weights", "Retrying in 8s", "Couldn't connect to the Hub").
LIBRARY_LOGGERS = (
    "rf-detr",
    "transformers",
    "diffusers",
    "huggingface_hub",
    "datasets",
    "accelerate",
    "bitsandbytes",
    "httpx",
    "httpcore",
    "urllib3",
    "filelock",
    "timm",
    "torch",
)
# The Hugging Face libraries' own verbosity variables (read when they are imported).
VERBOSITY_VARIABLES = ("TRANSFORMERS_VERBOSITY", "DIFFUSERS_VERBOSITY", "HF_HUB_VERBOSITY", "DATASETS_VERBOSITY")
# Commands whose long work is a library's transfer: its progress bars are theirs.
LIBRARY_PROGRESS_COMMANDS = frozenset({"download-models", "push", "deploy-space"})


class _OnlyErrors(logging.Filter):
    """Lets through a library's errors only; a filter, not a level, since rfdetr sets its own level on import."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR


def _quiet_library_noise(command: str | None = None) -> None:
    """Keep the libraries' logs, warnings and progress bars off stderr (they bury the one-line errors
    and the commands' own output); `--verbose` skips this. The project's own warnings and progress
    bars stay."""
    for name in VERBOSITY_VARIABLES:
        os.environ.setdefault(name, "error")
    if command not in LIBRARY_PROGRESS_COMMANDS:
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers follows it
        os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    quiet = _OnlyErrors()
    for name in LIBRARY_LOGGERS:
        logging.getLogger(name).addFilter(quiet)
        logging.getLogger(name).setLevel(logging.ERROR)
    # Deprecation notices and advice of the libraries (e.g. rfdetr's torch.jit.script FutureWarning);
    # the project's own warnings are RuntimeWarnings and stay.
    for category in (FutureWarning, DeprecationWarning, UserWarning):
        warnings.filterwarnings("ignore", category=category)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        _quiet_library_noise(args.command)
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
