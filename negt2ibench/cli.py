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
    "evaluator.geneval.cli",
    "judges.cli",
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
    except KeyboardInterrupt:
        print("interrupted: finished work is kept; run the same command again to resume", file=sys.stderr)
        return 130
    except Exception as error:  # noqa: BLE001 - last resort: one line unless debugging
        if os.environ.get("NEGT2I_DEBUG"):
            raise
        print(f"error: {type(error).__name__}: {error} (set NEGT2I_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
    return int(result or 0)


if __name__ == "__main__":
    sys.exit(main())
