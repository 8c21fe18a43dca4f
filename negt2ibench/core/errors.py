"""Errors that the CLI turns into one clear line and an exit code, never a traceback.

Exit codes, the same for every command:
- 0: done;
- 1: bad input or a failed check (`UserError`);
- 2: a usage error (`UsageError`: wrong or conflicting options), missing model weights
  (`MissingWeightsError`, whose message says how to get them) or a missing optional library
  (`MissingLibraryError`, whose message says how to install it).

Every error the project raises on purpose derives from `NegT2IError`; the CLI prints
``error: <message>`` and exits with its `exit_code`.
"""

from __future__ import annotations

import argparse
import re


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
    """A model weight is not on this machine (commands read local files only: nothing is downloaded
    unless asked). Exit code 2; the message names the command that gets it."""

    exit_code = 2

    def __init__(self, model: str, detail: str = "", *, how_to_get: str | None = None):
        if how_to_get is None:  # the evaluator's models
            how_to_get = (
                "Run `negt2ibench download-models` with internet access (it prints the HF_HUB_CACHE / RF_HOME "
                "lines to set on another machine), or pass --weights-dir DIR (a folder `download-models --dir DIR` "
                "filled)."
            )
        where = f" ({detail})" if detail else ""
        message = f"model weights for {model} are not on this machine{where}. {how_to_get}"
        super().__init__(message)
        self.model, self.detail, self.how_to_get = model, detail, how_to_get


class MissingLibraryError(UsageError):
    """An optional library a command needs is not installed (e.g. t2v-metrics for the vqascore judge).
    Exit code 2; the message says how to install it."""


def brief(error: BaseException, limit: int = 160) -> str:
    """A library error's first sentence, to quote inside a one-line message: never cut mid-word or
    mid-sentence without saying so (a sentence over LIMIT characters ends at a word, with " …")."""
    text = " ".join(str(error).split())
    if not text:
        return type(error).__name__
    sentence = re.split(r"(?<=[.!?])\s+(?=[A-Z(`'\"])", text, maxsplit=1)[0].rstrip(".")
    if len(sentence) > limit:
        sentence = sentence[:limit].rsplit(" ", 1)[0].rstrip(",;:(") + " …"
    return sentence
