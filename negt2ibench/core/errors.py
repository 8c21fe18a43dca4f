"""Errors that the CLI turns into one clear line and an exit code, never a traceback.

Exit codes, the same for every command:
- 0: done;
- 1: bad input or a failed check (`UserError`);
- 2: a usage error (`UsageError`: wrong or conflicting options) or missing model weights
  (`MissingWeightsError`, whose message says how to get them).

Every error the project raises on purpose derives from `NegT2IError`; the CLI prints
``error: <message>`` and exits with its `exit_code`.
"""

from __future__ import annotations

import argparse


class NegT2IError(Exception):
    """Base of the project's errors. Exit code 1 unless the subclass or the caller says otherwise."""

    exit_code = 1

    def __init__(self, message: str = "", exit_code: int | None = None):
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code

    def one_line(self) -> str:
        """What the CLI prints after ``error: ``: the message's first line (a subclass may say it shorter)."""
        text = str(self).strip()
        return text.splitlines()[0] if text else type(self).__name__


class UserError(NegT2IError):
    """Bad input or a failed check the user can fix. Exit code 1 unless given."""

    exit_code = 1


class UsageError(UserError):
    """Wrong, missing or conflicting command options (argparse's own usage errors exit 2 too)."""

    exit_code = 2


class OptionError(UsageError, argparse.ArgumentTypeError):
    """An option value of the wrong form (`negt2ibench.core.options`). As an argparse `type=` it becomes
    argparse's own usage error ("argument --batch-size: ...", exit 2); raised anywhere else, exit 2 too."""


class MissingWeightsError(UserError):
    """A model weight is not on this machine and cannot be downloaded (offline). Exit code 2."""

    exit_code = 2

    def __init__(self, model: str, detail: str = "", *, how_to_get: str | None = None):
        if how_to_get is None:  # the evaluator's models
            how_to_get = (
                "Run `negt2ibench download-models` on a machine with internet access "
                "(it prints the HF_HUB_CACHE / RF_HOME lines to set here), or pass --weights-dir."
            )
        message = f"model weights for {model} are not available offline{': ' + detail if detail else ''}. {how_to_get}"
        super().__init__(message)
        self.model, self.detail = model, detail
