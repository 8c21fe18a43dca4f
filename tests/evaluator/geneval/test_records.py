"""GenEval's result records (`evaluator.geneval.records`): a results file is read strictly unless asked
otherwise, as the NegT2IBench records are (`evaluator.resultio.read_results`)."""

from __future__ import annotations

import pytest

from evaluator.geneval.records import read_geneval_records
from evaluator.resultio import ResultFileError


def test_a_torn_last_line_is_refused_unless_reading_leniently(tmp_path):
    path = tmp_path / "geneval_results.jsonl"
    path.write_text('{"filename": "00000/samples/0000.png", "tag": "single_obj', encoding="utf-8")  # a killed writer
    with pytest.raises(ResultFileError, match="geneval_results.jsonl:1"):
        read_geneval_records(path)
    assert read_geneval_records(path, strict=False) == []
