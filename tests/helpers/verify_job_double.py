"""`negt2ibench leaderboard verify-job`, run as a job subprocess, with the rectangle perception double
in place of the real models (no weights here). Everything else is the product's command: its
parser, its handler (`leaderboard.cli.verify_job`), the store, the claim and the outcome.

    python -m tests.helpers.verify_job_double [--gate FILE] -- leaderboard verify-job --entry ID ...

`--gate FILE`: the double's first observation waits until FILE exists (a test kills the job while it
waits, so "mid-run" is a state, not a moment).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from tests.helpers.space_helpers import RectanglePerception


class GatedPerception(RectanglePerception):
    def __init__(self, gate: Path | None):
        super().__init__()
        self.gate = gate

    def observe(self, images, prompts):
        while self.gate is not None and not self.gate.exists():
            time.sleep(0.05)
        return super().observe(images, prompts)


def main(argv: list[str]) -> int:
    own = argparse.ArgumentParser(prog="verify_job_double")
    own.add_argument("--gate", type=Path, default=None)
    split = argv.index("--") if "--" in argv else len(argv)
    options = own.parse_args(argv[:split])

    from dataset_builder.loading import prompt_index
    from leaderboard.cli import verify_job
    from leaderboard.intake.submissions import PRESET
    from negt2ibench.api import Evaluator
    from negt2ibench.cli import build_parser
    from negt2ibench.core.errors import NegT2IError

    args = build_parser().parse_args(argv[split + 1 :])
    try:  # as `negt2ibench.cli.main` answers: one line, the error's exit code
        evaluator = Evaluator(PRESET, prompts=prompt_index(args.dataset), perception=GatedPerception(options.gate))
        return verify_job(args, evaluator=evaluator)
    except NegT2IError as error:
        print(f"error: {error.one_line()}", file=sys.stderr)
        return error.exit_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
