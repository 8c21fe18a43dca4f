"""Option values, validated once: the same checks serve argparse (`type=`) and the Python API.

Each validator takes the raw value (a string from the command line, or a Python value) and
returns the parsed value, or raises `negt2ibench.core.errors.OptionError`. argparse reports an `OptionError` as its own
usage error ("argument --batch-size: must be a positive integer, got '0'", exit 2); a Python
caller gets a `UsageError` (exit code 2 in the CLI too). `check(name, value, validator)` names the
argument in the message for Python callers.

    parser.add_argument("--batch-size", type=positive_int, default=8)
    batch_size = check("batch_size", batch_size, positive_int)

The options several commands take (`--device`, `--weights-dir`, `--batch-size`, `--num-workers`,
`--limit`, `--no-progress`, `--json`, `--prompts`, `--home`, `--seed`, `--bootstrap`,
`--confidence`) are added by the `add_*` helpers at the end, each with its validator and metavar:

    add_batch_size_option(parser, "images per model batch (default: 8)")
"""

from __future__ import annotations

import ipaddress
import math
import re
from argparse import ArgumentParser
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from .errors import OptionError
from .names import check_split_name

T = TypeVar("T")

# What `--device` accepts; `auto` picks cuda, then mps, then cpu (`negt2ibench.core.launch.select_device`).
DEVICE_CHOICES: tuple[str, ...] = ("auto", "cpu", "cuda", "mps")
_CUDA_INDEX = re.compile(r"^cuda:\d+$")
# A Hub repo id: ORG/NAME.
REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
COMMIT_SHA = re.compile(r"^[0-9a-f]{7,40}$")  # a git commit, full or abbreviated
MAX_URL = 2000


def _parse(value: Any, kind: type[int] | type[float], rule: str) -> Any:
    """VALUE as KIND (an int stays an int; a text is parsed), or an `OptionError` that says RULE."""
    if isinstance(value, bool):
        raise OptionError(f"must be {rule}, got {value!r}")
    if isinstance(value, int) and kind is int:
        return value
    try:
        return kind(str(value).strip())
    except ValueError:
        raise OptionError(f"must be {rule}, got {value!r}") from None


def _integer(value: Any, rule: str) -> int:
    return _parse(value, int, rule)


def _float(value: Any, rule: str) -> float:
    return _parse(value, float, rule)


def positive_int(value: Any) -> int:
    """An integer of at least 1 (batch sizes, image counts, shard sizes, limits)."""
    number = _integer(value, "a positive integer")
    if number < 1:
        raise OptionError(f"must be a positive integer, got {value!r}")
    return number


def non_negative_int(value: Any) -> int:
    """An integer of at least 0."""
    number = _integer(value, "a non-negative integer")
    if number < 0:
        raise OptionError(f"must be a non-negative integer, got {value!r}")
    return number


def integer(value: Any) -> int:
    """Any integer (seeds)."""
    return _integer(value, "an integer")


def non_negative_number(value: Any) -> float:
    """A finite number of at least 0 (a guidance scale)."""
    number = _float(value, "a number of 0 or more")
    if not (math.isfinite(number) and number >= 0.0):
        raise OptionError(f"must be a number of 0 or more, got {value!r}")
    return number


def fraction(value: Any) -> float:
    """A number strictly between 0 and 1 (an interval's coverage, e.g. 0.95)."""
    number = _float(value, "a number between 0 and 1 (exclusive)")
    if not 0.0 < number < 1.0:  # NaN fails too
        raise OptionError(f"must be a number between 0 and 1 (exclusive), got {value!r}")
    return number


def device(value: Any) -> str:
    """auto, cpu, cuda, cuda:N or mps."""
    text = str(value)
    if text in DEVICE_CHOICES or _CUDA_INDEX.match(text):
        return text
    raise OptionError(f"unknown device {value!r}; choose one of {', '.join(DEVICE_CHOICES)} or cuda:N")


def split_name(value: Any) -> str:
    """A split name / model key: [a-z0-9_]+ (`negt2ibench.core.names.check_split_name`)."""
    return check_split_name(value, what="")


def repo_id(value: Any) -> str:
    """A Hugging Face Hub repo id, ORG/NAME."""
    if isinstance(value, str) and REPO_ID.match(value):
        return value
    raise OptionError(f"must look like ORG/NAME, got {value!r}")


def commit_sha(value: Any) -> str:
    """A git commit hash: 7 to 40 lower-case hex digits."""
    if isinstance(value, str) and COMMIT_SHA.match(value):
        return value
    raise OptionError(f"must be a commit hash (7 to 40 hex digits), got {value!r}")


_GIT_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$")


def git_revision(value: Any) -> str:
    """A branch, tag or commit of a Hub repo (letters, digits, `._/-`, at most 100 characters, no `..`)."""
    if isinstance(value, str) and _GIT_REVISION.match(value) and ".." not in value:
        return value
    raise OptionError(f"must be a branch, tag or commit name, got {str(value)[:80]!r}")


def http_url(value: Any) -> str:
    """An http(s) address with a host, without spaces, at most 2,000 characters."""
    from urllib.parse import urlsplit

    text = value if isinstance(value, str) else ""
    parts = urlsplit(text) if text and len(text) <= MAX_URL and not any(c.isspace() for c in text) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        shown = text[:80] + ("..." if len(text) > 80 else "") if text else value
        raise OptionError(f"must be an http(s) address, got {shown!r}")
    return text


MAX_PORT = 65535
_HOST_LABEL = re.compile(r"^(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")
MAX_HOST_NAME = 253


def port(value: Any) -> int:
    """A TCP port to listen on: a whole number from 1 to 65535."""
    rule = f"a port number from 1 to {MAX_PORT}"
    number = _integer(value, rule)
    if not 1 <= number <= MAX_PORT:
        raise OptionError(f"must be {rule}, got {value!r}")
    return number


def host(value: Any) -> str:
    """An address to listen on: an IPv4 or IPv6 address (127.0.0.1, 0.0.0.0, ::1), or a host name by
    RFC 1123 (localhost, my-box.lan): labels of 1 to 63 letters, digits and hyphens, joined by dots,
    none starting or ending with a hyphen, at most 253 characters, the last label not all digits (so
    999.1.1.1 is no name). A name is not looked up here: whether it resolves is the server's check."""
    text = value if isinstance(value, str) else ""
    try:
        ipaddress.ip_address(text)
        return text
    except ValueError:
        pass
    labels = text.removesuffix(".").split(".") if text else []
    if (
        labels
        and len(text) <= MAX_HOST_NAME
        and all(_HOST_LABEL.match(label) for label in labels)
        and not labels[-1].isdigit()
    ):
        return text
    shown = text[:80] + ("..." if len(text) > 80 else "") if text else value
    raise OptionError(f"must be an IP address or a host name (letters, digits, hyphens and dots), got {shown!r}")


def job_flavor(value: Any) -> str:
    """A Hugging Face Jobs hardware flavour (`huggingface_hub.JobHardware`: cpu-basic ... l4x1, a10g-large, h200)."""
    from huggingface_hub import JobHardware

    flavors = [flavor.value for flavor in JobHardware]
    if value in flavors:
        return str(value)
    gpus = ", ".join(f for f in flavors if not f.startswith("cpu"))
    raise OptionError(f"unknown Jobs flavour {value!r}; choose one of {gpus} (or a cpu-* flavour)")


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd]?)$")
_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def duration(value: Any) -> int:
    """A duration in whole seconds, at least 1: a number of seconds, or with s, m, h or d (90m, 2h)."""
    if isinstance(value, int) and not isinstance(value, bool):
        seconds = value
    else:
        found = _DURATION.match(str(value).strip().lower())
        if found is None:
            raise OptionError(f"must be a duration such as 3600, 90m or 2h, got {value!r}")
        seconds = math.ceil(float(found.group(1)) * _SECONDS[found.group(2)])
    if seconds < 1:
        raise OptionError(f"must be a duration of at least 1 second, got {value!r}")
    return seconds


def one_of(choices: tuple[str, ...], what: str = "value") -> Callable[[Any], str]:
    """A validator for a fixed set of names whose error lists them (for names not known to argparse)."""

    def validate(value: Any) -> str:
        if value in choices:
            return value
        raise OptionError(f"unknown {what} {value!r}; choose one of {', '.join(choices)}")

    validate.__name__ = what.replace(" ", "_")
    return validate


def check(name: str, value: Any, validator: Callable[[Any], T]) -> T:
    """`validator(value)` for a Python caller: an `OptionError` whose message starts with NAME."""
    try:
        return validator(value)
    except OptionError as error:
        raise OptionError(f"{name} {error}") from None


# -- the options the commands share: each validated and spelled here once ---------------------------
# A command passes only what it says differently (its help text, a default); the flag, its validator
# and its metavar come from here, so `--batch-size 0` is refused with the same words by every command.

DEVICE_HELP = "auto, cpu, cuda, cuda:N or mps (default: auto)"
WEIGHTS_DIR_HELP = "folder filled by `negt2ibench download-models --dir DIR`"
NO_PROGRESS_HELP = "no progress bar"


def add_device_option(parser: ArgumentParser, help: str = DEVICE_HELP, *, metavar: str | None = None) -> None:
    """Add `--device` (validated by `device`; default auto) to PARSER.

    Args:
        parser: the command's parser (or an argument group).
        help: what the device is for in this command.
        metavar: the value's name in `--help` (default: argparse's, DEVICE).
    """
    parser.add_argument("--device", type=device, default="auto", metavar=metavar, help=help)


def add_weights_dir_option(parser: ArgumentParser, help: str = WEIGHTS_DIR_HELP, *, as_path: bool = False) -> None:
    """Add `--weights-dir DIR` (default None: the libraries' caches) to PARSER.

    Args:
        parser: the command's parser.
        help: where the weights are looked for by default in this command.
        as_path: parse the value as a `pathlib.Path` rather than keep the text.
    """
    parsed: dict[str, Any] = {"type": Path} if as_path else {}
    parser.add_argument("--weights-dir", **parsed, default=None, metavar="DIR", help=help)


def add_batch_size_option(parser: ArgumentParser, help: str, *, default: int = 8, metavar: str | None = "N") -> None:
    """Add `--batch-size` (a `positive_int`) to PARSER.

    Args:
        parser: the command's parser.
        help: what one batch holds in this command, with its default.
        default: the batch size when the option is not given.
        metavar: the value's name in `--help` (None: argparse's, BATCH_SIZE).
    """
    parser.add_argument("--batch-size", type=positive_int, default=default, metavar=metavar, help=help)


def add_num_workers_option(parser: ArgumentParser, help: str, *, default: int | None = None) -> None:
    """Add `--num-workers N` (a `non_negative_int`: image-decoding processes) to PARSER.

    Args:
        parser: the command's parser.
        help: what the workers do in this command, with the default.
        default: the count when the option is not given (None: the command picks one from the CPU count).
    """
    parser.add_argument("--num-workers", type=non_negative_int, default=default, metavar="N", help=help)


def add_limit_option(
    parser: ArgumentParser, help: str, *, at_least_one: bool = False, metavar: str | None = "N"
) -> None:
    """Add `--limit` (at most N items of the source; default None: all) to PARSER.

    Args:
        parser: the command's parser.
        help: what is limited in this command.
        at_least_one: refuse 0 (`positive_int`) instead of accepting it (`non_negative_int`).
        metavar: the value's name in `--help` (None: argparse's, LIMIT).
    """
    kind = positive_int if at_least_one else non_negative_int
    parser.add_argument("--limit", type=kind, default=None, metavar=metavar, help=help)


def add_no_progress_flag(parser: ArgumentParser, help: str = NO_PROGRESS_HELP) -> None:
    """Add `--no-progress` (hide the progress bars) to PARSER."""
    parser.add_argument("--no-progress", action="store_true", help=help)


def add_json_flag(parser: ArgumentParser, help: str) -> None:
    """Add `--json`, a flag: also print what the command did as JSON (HELP says what)."""
    parser.add_argument("--json", action="store_true", help=help)


def add_json_file_option(parser: ArgumentParser, help: str) -> None:
    """Add `--json FILE` (a `pathlib.Path`): also write the command's numbers there as JSON (HELP says which)."""
    parser.add_argument("--json", type=Path, metavar="FILE", help=help)


def add_prompts_option(parser: ArgumentParser, help: str, *, metavar: str = "DIR") -> None:
    """Add `--prompts` (where prompt records are read; default None: the built-in corpus) to PARSER.

    Args:
        parser: the command's parser.
        help: which prompts the command reads and its default.
        metavar: the value's name in `--help` (DIR, or SRC where a Hub id is accepted too).
    """
    parser.add_argument("--prompts", metavar=metavar, help=help)


def add_home_option(parser: ArgumentParser, help: str, *, metavar: str | None = None) -> None:
    """Add `--home` (NEGT2I_HOME for this run, a `pathlib.Path`; default None: the environment's) to PARSER."""
    parser.add_argument("--home", type=Path, default=None, metavar=metavar, help=help)


def add_seed_option(parser: ArgumentParser, help: str, *, metavar: str = "N") -> None:
    """Add `--seed` (an `integer`, default 0) to PARSER; HELP says what it seeds."""
    parser.add_argument("--seed", type=integer, default=0, metavar=metavar, help=help)


def add_bootstrap_option(parser: ArgumentParser, help: str) -> None:
    """Add `--bootstrap N` (resamples, a `non_negative_int`; default 1000) to PARSER."""
    parser.add_argument("--bootstrap", type=non_negative_int, default=1000, metavar="N", help=help)


def add_interval_options(
    parser: ArgumentParser,
    *,
    bootstrap_help: str = "bootstrap resamples (default 1000; 0: none)",
    seed_help: str = "bootstrap seed (default 0)",
    seed_metavar: str = "N",
) -> None:
    """Add `--bootstrap`, `--seed` and `--confidence` (a `fraction`, default 0.95): a percentile interval's options.

    Args:
        parser: the command's parser.
        bootstrap_help: the `--bootstrap` help of this command.
        seed_help: the `--seed` help of this command.
        seed_metavar: the `--seed` value's name in `--help`.
    """
    add_bootstrap_option(parser, bootstrap_help)
    add_seed_option(parser, seed_help, metavar=seed_metavar)
    parser.add_argument(
        "--confidence", type=fraction, default=0.95, metavar="P", help="interval coverage (default 0.95)"
    )
