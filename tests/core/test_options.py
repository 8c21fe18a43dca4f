"""`negt2ibench.core.options`' shared argparse options: every command that takes one of them takes it
through the same helper, so its validator, default and metavar are the same everywhere."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from negt2ibench.cli import build_parser
from negt2ibench.core import options
from negt2ibench.core.errors import OptionError


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, parser) of every command and sub-command, once each."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias shares its command's parser
                    seen.add(id(sub))
                    yield from _commands(sub, (*path, name))


def _option(flag: str) -> list[tuple[tuple[str, ...], argparse.Action]]:
    found = []
    for path, parser in _commands(build_parser()):
        found += [(path, action) for action in parser._actions if flag in action.option_strings]
    return found


# flag -> (validator, the defaults the commands use)
SHARED = {
    "--device": (options.device, {"auto"}),
    "--batch-size": (options.positive_int, {1, 8, 64}),
    "--num-workers": (options.non_negative_int, {None, 0}),
    "--bootstrap": (options.non_negative_int, {1000}),
    "--confidence": (options.fraction, {0.95}),
    "--port": (options.port, {os.environ.get("GRADIO_SERVER_PORT", "7860"), 18085}),  # serve, reward serve
    "--host": (options.host, {"127.0.0.1"}),
}


@pytest.mark.parametrize("flag", sorted(SHARED))
def test_a_shared_option_is_validated_alike_in_every_command(flag):
    validator, defaults = SHARED[flag]
    found = _option(flag)
    assert len(found) >= 2, f"{flag} is taken by {len(found)} command(s)"
    for path, action in found:
        assert action.type is validator, f"{' '.join(path)} {flag}: {action.type}"
        assert action.default in defaults, f"{' '.join(path)} {flag}: default {action.default!r}"


def test_every_limit_counts_images_or_prompts():
    for path, action in _option("--limit"):
        assert action.type in (options.positive_int, options.non_negative_int), " ".join(path)
        assert action.default is None, " ".join(path)


def test_a_json_option_is_a_flag_or_a_file():
    kinds = {(type(action).__name__, action.type) for _, action in _option("--json")}
    assert kinds == {("_StoreTrueAction", None), ("_StoreAction", Path)}


def test_the_helpers_refuse_a_bad_value_with_the_validators_words():
    parser = argparse.ArgumentParser(prog="p", exit_on_error=False)
    options.add_batch_size_option(parser, "images per batch")
    options.add_device_option(parser)
    options.add_weights_dir_option(parser, as_path=True)
    assert parser.parse_args(["--batch-size", "3", "--weights-dir", "w"]) == argparse.Namespace(
        batch_size=3, device="auto", weights_dir=Path("w")
    )
    with pytest.raises(argparse.ArgumentError, match="must be a positive integer, got '0'"):
        parser.parse_args(["--batch-size", "0"])
    with pytest.raises(OptionError, match="unknown device 'tpu'"):
        options.device("tpu")


@pytest.mark.parametrize("value", ["1", "80", "7860", "65535", 443])
def test_a_port_is_a_whole_number_from_1_to_65535(value):
    assert options.port(value) == int(value)


@pytest.mark.parametrize("value", ["0", "65536", "99999", "-1", "http", "80.5", "", True])
def test_a_port_outside_the_range_is_refused(value):
    with pytest.raises(OptionError, match="must be a port number from 1 to 65535"):
        options.port(value)


@pytest.mark.parametrize(
    "value", ["127.0.0.1", "0.0.0.0", "::", "::1", "fe80::1%eth0", "localhost", "my-box.lan", "a.b."]
)
def test_a_host_is_an_address_or_a_name(value):
    assert options.host(value) == value


@pytest.mark.parametrize(
    "value",
    ["", "bad host", "999.1.1.1", "1.2.3", "-lead.example", "trail-.example", "a" * 64, "x_y", "http://x", "[::1]", 7],
)
def test_a_host_that_is_neither_is_refused(value):
    with pytest.raises(OptionError, match="must be an IP address or a host name"):
        options.host(value)


def test_a_host_name_is_at_most_253_characters():
    name = ".".join(["a" * 63] * 4)[:253]
    assert options.host(name) == name
    with pytest.raises(OptionError):
        options.host(name + "a")
