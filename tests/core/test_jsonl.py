"""`negt2ibench.core.jsonl`, the one JSONL reader: results, prompts.jsonl and stored submissions read alike."""

from __future__ import annotations

import gzip
import json

import pytest

from dataset_builder.loading import NoPromptsError, PromptFileError, load_prompts
from dataset_builder.records import PromptRecord
from negt2ibench.core.errors import UserError
from negt2ibench.core.jsonl import JsonlError, parse_jsonl, read_jsonl
from tests.helpers.generation_helpers import three_prompts


def parse_object(raw: bytes) -> dict:
    value = json.loads(raw)
    if not isinstance(value, dict):
        raise ValueError("not an object")
    return value


def test_records_blank_lines_and_a_last_line_without_newline():
    contents = parse_jsonl(b'{"a": 1}\n\n{"a": 2}', parse_object, source="x.jsonl")
    assert contents.records == [{"a": 1}, {"a": 2}]
    assert (contents.torn, contents.missing_newline, contents.good_bytes) == (None, True, 18)


def test_a_bad_line_names_source_and_line():
    with pytest.raises(JsonlError, match=r"^x\.jsonl:3: not JSON \(Expecting value at column 1\)$") as caught:
        parse_jsonl(b'{"a": 1}\n\nnope\n{"a": 2}\n', parse_object, source="x.jsonl")
    assert isinstance(caught.value, UserError) and isinstance(caught.value, ValueError)


def test_a_torn_last_line_is_reported_not_raised():
    contents = parse_jsonl(b'{"a": 1}\n{"a": ', parse_object, source="x.jsonl")
    assert contents.records == [{"a": 1}] and contents.good_bytes == 9
    assert contents.torn.startswith("x.jsonl:2: torn last line (6 bytes without a newline: not JSON")


def test_read_jsonl_strict_and_lenient(tmp_path, caplog):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a": 1}\n{"a": ')
    with pytest.raises(JsonlError, match="torn last line .*; pass strict=False to drop it"):
        read_jsonl(path, parse_object)
    assert read_jsonl(path, parse_object, strict=False) == [{"a": 1}]
    assert "dropping" in caplog.text
    with pytest.raises(JsonlError, match="no such JSONL file"):
        read_jsonl(tmp_path / "missing.jsonl", parse_object)
    with pytest.raises(JsonlError, match="is a folder, not a JSONL file"):
        read_jsonl(tmp_path, parse_object)


def test_prompts_jsonl_errors_carry_line_numbers(tmp_path):
    prompts = three_prompts()
    path = tmp_path / "prompts.jsonl"
    lines = [p.model_dump_json() for p in prompts]
    lines[1] = lines[1].replace('"category":"color"', '"category":"colour"')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PromptFileError, match=r"prompts\.jsonl:2: not a prompt record \(category: Input should be"):
        load_prompts(path)
    path.write_text("\n".join(p.model_dump_json() for p in prompts) + "\n")
    assert load_prompts(tmp_path) == prompts
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(NoPromptsError, match="holds neither prompts.jsonl nor prompts/"):
        load_prompts(tmp_path / "empty_dir")
    with pytest.raises(FileNotFoundError, match="no prompts at"):
        load_prompts(tmp_path / "nowhere.jsonl")


def test_stored_submission_results_are_read_by_the_same_reader():
    from leaderboard.store.entries import parse_results_blob as _parse_results_blob

    with pytest.raises(JsonlError, match="^stored results:1: not JSON"):
        _parse_results_blob(gzip.compress(b"nope\n"))
    assert _parse_results_blob(gzip.compress(b"\n")) == []


def test_prompt_records_round_trip_through_the_reader(tmp_path):
    prompts = three_prompts()
    path = tmp_path / "p.jsonl"
    path.write_text("".join(p.model_dump_json() + "\n" for p in prompts))
    assert read_jsonl(path, PromptRecord.model_validate_json, kind="prompt") == prompts


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\n",
        b'{"a": 1}\n{"a": 2}\n',
        b'{"a": 1}\n\n{"a": 2}',
        b'  \n{"a": 1}\r\n\t\n{"a": 2}\n   ',
        b'{"a": 1}\n{"a": 2}\n\n\n',
    ],
)
def test_a_file_without_a_bad_line_reads_the_same_whole_as_line_by_line(data):
    # Such a file is parsed in one pass (`_parse_whole`); the line-by-line loop, the one that can
    # say where a bad line is, must find the same records, line numbers and ends.
    from negt2ibench.core.jsonl import _parse_lines, _parse_whole

    line_by_line = _parse_lines(data, parse_object, source="x", kind="JSONL", error=JsonlError, skip_bad=False)
    assert _parse_whole(data, parse_object) == line_by_line
    assert parse_jsonl(data, parse_object, source="x") == line_by_line


def test_a_file_with_a_bad_line_is_read_line_by_line_and_says_where():
    from negt2ibench.core.jsonl import _parse_whole

    data = b'{"a": 1}\n[2]\n{"a": 3}\n{"a": 4'
    assert _parse_whole(data, parse_object) is None
    contents = parse_jsonl(data, parse_object, source="x", skip_bad=True)
    assert contents.records == [{"a": 1}, {"a": 3}] and contents.lines == [1, 3]
    assert contents.bad == ["x:2: not an object"] and contents.torn is not None and contents.good_bytes == 22
