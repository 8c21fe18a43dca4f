"""Reading NegVQA: the authors' JSONL, VLMEvalKit's TSV and a Hub parquet give the same questions; the
plain schema and `--columns`; malformed rows by row number; folders, `--data-file`, the Hub cache offline.

The synthetic questions are tests/helpers/negvqa_helpers.py's (the authors' field names, skimage images).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from evaluator.images import ImageError, load_image
from judges.negvqa.data import DOMAIN_OF, DOMAINS, data_files, parse_columns, read_questions
from judges.negvqa.files import image_data
from negt2ibench.core.errors import UsageError, UserError
from tests.helpers.negvqa_helpers import QUESTIONS, negvqa_rows, skimage_png, write_jsonl, write_parquet, write_tsv

REPO = Path(__file__).resolve().parents[2]


def summary_of(data) -> list[tuple]:
    return [
        (q.question_id, q.question, q.choices, q.answer, q.source, q.domain, q.original_question, q.original_answer)
        for q in data.questions
    ]


EXPECTED = [
    (str(i), negated, (a, b), answer, source, DOMAIN_OF[source], original, original_answer)
    for i, (_, source, negated, original, a, b, answer, original_answer) in enumerate(QUESTIONS)
]


def test_domains_are_negvqas_twenty_datasets_in_four_groups():
    # VLMEvalKit vmcbench.report_vmc_acc / NegVQA plot_results.ipynb: 7 + 6 + 2 + 5 datasets.
    assert {domain: len(sources) for domain, sources in DOMAINS.items()} == {
        "General": 7,
        "Reasoning": 6,
        "OCR": 2,
        "Doc & Chart": 5,
    }
    assert len(DOMAIN_OF) == 20 and DOMAIN_OF["ScienceQA"] == "Reasoning" and DOMAIN_OF["AI2D"] == "Doc & Chart"


@pytest.mark.parametrize("write", [write_jsonl, write_tsv, write_parquet], ids=["jsonl", "tsv", "parquet"])
def test_the_released_formats_give_the_same_questions_and_images(tmp_path, write):
    suffix = {"write_jsonl": ".jsonl", "write_tsv": ".tsv", "write_parquet": ".parquet"}[write.__name__]
    data = read_questions(write(tmp_path / f"NegVQA-7379{suffix}", negvqa_rows()))
    assert summary_of(data) == EXPECTED and data.malformed == []
    for question, (name, *_) in zip(data.questions, QUESTIONS, strict=True):
        image = load_image(question.fetch())  # what the engine's loader does
        expected = Image.open(io.BytesIO(skimage_png(name))).convert("RGB")
        assert image.size == expected.size and image.tobytes() == expected.tobytes()
    assert data.questions[2].label == f"{tmp_path / f'NegVQA-7379{suffix}'} row 3"


def test_the_original_file_of_the_authors_still_reads_the_negated_questions(tmp_path):
    # NegVQA-7379-original.jsonl: `question`/`answer` are the original's; the negated fields are kept.
    rows = [row | {"question": row["original_question"], "answer": row["original_answer"]} for row in negvqa_rows()]
    assert summary_of(read_questions(write_jsonl(tmp_path / "NegVQA-7379-original.jsonl", rows))) == EXPECTED


def test_the_plain_schema_and_a_column_mapping(tmp_path):
    plain = [
        {"id": "q1", "image": "pic.png", "question": "What is not red?", "A": "the cup", "B": "the car"}
        | {"answer": "b", "source": "mine", "domain": "toys"},
        {"id": "q2", "image": "pic.png", "question": "What is red?", "A": 1, "B": 2.5, "answer": "(A)"}
        | {"source": "VQAv2"},
    ]
    (tmp_path / "pic.png").write_bytes(skimage_png("coffee"))  # a path relative to the data file
    data = read_questions(write_jsonl(tmp_path / "plain.jsonl", plain))
    assert [(q.question_id, q.choices, q.answer, q.domain) for q in data.questions] == [
        ("q1", ("the cup", "the car"), "B", "toys"),
        ("q2", ("1", "2.5"), "A", "General"),  # the domain of a NegVQA source when none is given
    ]
    assert load_image(data.questions[0].fetch()).size == (64, 43)

    renamed = [
        {"qid": r["id"], "pic": r["image"], "q": r["question"], "first": r["A"], "second": r["B"]}
        | {"key": r["answer"], "dataset": r["source"], "kind": r.get("domain", "")}
        for r in plain
    ]
    mapping = parse_columns(["id=qid", "image=pic", "question=q", "A=first", "B=second", "answer=key"])
    mapping |= parse_columns(["source=dataset", "domain=kind"])
    mapped = read_questions(write_jsonl(tmp_path / "renamed.jsonl", renamed), columns=mapping)
    assert [(q.question_id, q.question, q.answer, q.source, q.domain) for q in mapped.questions] == [
        ("q1", "What is not red?", "B", "mine", "toys"),
        ("q2", "What is red?", "A", "VQAv2", "General"),  # an empty domain cell: the source's domain
    ]
    assert mapped.malformed == []
    # The plain names are not read once a key is mapped: `question` left in the file is ignored.
    again = read_questions(write_jsonl(tmp_path / "both.jsonl", [r | {"q": "Which?"} for r in plain]),
                           columns={"question": "q"})  # fmt: skip
    assert {q.question for q in again.questions} == {"Which?"}


def test_malformed_rows_are_left_out_one_line_each_by_row_number(tmp_path):
    rows = negvqa_rows()
    bad = [
        rows[0],
        rows[1] | {"negated_answer": "C"},
        {key: value for key, value in rows[2].items() if key != "A"},
        rows[3] | {"original_answer": None},
        rows[4] | {"index": 0},
        rows[5] | {"category": "Unknown"},
        {key: value for key, value in rows[1].items() if key != "image"} | {"index": 9},
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", bad)
    with path.open("a") as handle:
        handle.write("{not json\n\n[1, 2]\n")
    data = read_questions(path)
    assert [q.question_id for q in data.questions] == ["0"]
    assert data.malformed == [
        f"{path} row 2: answer 'C' is not A or B",
        f"{path} row 3: no A (column A)",
        f"{path} row 4: an original question without its answer, or an answer without its question",
        f"{path} row 5: duplicate id '0' (first at {path} row 1)",
        f"{path} row 6: no domain, and source 'Unknown' is none of NegVQA's 20 datasets (give a domain column)",
        f"{path} row 7: no image (column image or image_path)",
        f"{path} row 8: not JSON (Expecting property name enclosed in double quotes: line 1 column 2 (char 1))",
        f"{path} row 10: not a JSON object (a list)",
    ]


def test_a_tsv_record_of_the_wrong_width_is_malformed(tmp_path):
    path = write_tsv(tmp_path / "NegVQA.tsv", negvqa_rows())
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].rstrip("\n") + "\textra\n"  # data row 2: one cell too many
    path.write_text("".join(lines))
    data = read_questions(path)
    assert [q.question_id for q in data.questions] == ["0", "2", "3", "4", "5"]
    header = len(lines[0].split("\t"))
    assert data.malformed == [f"{path} row 2: {header + 1} cells, the header has {header}"]
    assert load_image(data.questions[4].fetch()).size == (64, 32)  # rows after it still find their image


def test_a_missing_column_is_one_error_for_the_source_not_a_line_per_row(tmp_path):
    rows = [{key: value for key, value in row.items() if key != "negated_answer"} for row in negvqa_rows()]
    path = write_jsonl(tmp_path / "x.jsonl", rows)
    with pytest.raises(UserError, match=r"no answer column \(negated_answer or answer\).*--columns answer=NAME"):
        read_questions(path)
    with pytest.raises(UserError, match=r"no column 'label' \(--columns answer=label\)"):
        read_questions(path, columns={"answer": "label"})


@pytest.mark.parametrize(
    ("pairs", "message"),
    [(["question"], "KEY=NAME pairs"), (["questoin=q"], "unknown key 'questoin'"), (["A="], "KEY=NAME pairs")],
)
def test_column_pairs_are_checked(pairs, message):
    with pytest.raises(UsageError, match=message):
        parse_columns(pairs)


def test_vlmevalkit_short_image_cells_name_the_row_holding_the_image(tmp_path):
    rows = negvqa_rows()
    rows[3]["image"] = "0"  # VLMEvalKit: an image cell of ≤ 64 characters is another row's index
    data = read_questions(write_tsv(tmp_path / "NegVQA.tsv", rows))
    assert load_image(data.questions[3].fetch()).tobytes() == load_image(data.questions[0].fetch()).tobytes()


def test_image_cells_of_every_kind(tmp_path):
    png = skimage_png("camera")
    (tmp_path / "a.png").write_bytes(png)
    assert image_data({"bytes": png, "path": "x.png"}, tmp_path) == png
    assert image_data({"bytes": None, "path": "a.png"}, tmp_path) == tmp_path / "a.png"
    assert image_data([str(tmp_path / "a.png")], tmp_path) == tmp_path / "a.png"
    with pytest.raises(ImageError, match="holds 2 images"):
        image_data([png, png], tmp_path)
    with pytest.raises(ImageError, match="neither a file nor base64"):
        image_data("not an image!", tmp_path)
    with pytest.raises(ImageError, match="no image file at"):
        image_data({"path": "missing.png"}, tmp_path)


def test_a_folder_reads_its_one_data_file_and_never_model_preds(tmp_path):
    write_jsonl(tmp_path / "NegVQA-7379.jsonl", negvqa_rows())
    (tmp_path / "model_preds").mkdir()
    write_jsonl(tmp_path / "model_preds" / "Qwen2-VL-72B.jsonl", [{"prediction": "A"}])
    (tmp_path / "README.md").write_text("# NegVQA")
    data = read_questions(tmp_path)
    assert len(data.questions) == 6 and data.questions[0].label == "NegVQA-7379.jsonl row 1"

    write_tsv(tmp_path / "NegVQA_negated.tsv", negvqa_rows()[:2])
    with pytest.raises(UserError, match=r"several data files \(NegVQA-7379.jsonl, NegVQA_negated.tsv\).*--data-file"):
        read_questions(tmp_path)
    assert len(read_questions(tmp_path, data_file="*.tsv").questions) == 2
    with pytest.raises(UserError, match="no data file .* matches --data-file 'nothing.\\*'"):
        read_questions(tmp_path, data_file="nothing.*")


def test_parquet_shards_of_one_split_are_read_together(tmp_path):
    (tmp_path / "data").mkdir()
    rows = negvqa_rows()
    write_parquet(tmp_path / "data" / "test-00000-of-00002.parquet", rows[:4])
    write_parquet(tmp_path / "data" / "test-00001-of-00002.parquet", rows[4:])
    assert [p.name for p in data_files(tmp_path)] == ["test-00000-of-00002.parquet", "test-00001-of-00002.parquet"]
    assert summary_of(read_questions(tmp_path)) == EXPECTED
    write_parquet(tmp_path / "data" / "dev-00000-of-00001.parquet", rows[:1])
    with pytest.raises(UserError, match="several data files"):
        read_questions(tmp_path)
    assert len(read_questions(tmp_path, data_file="data/dev-*").questions) == 1


def test_sources_that_are_not_data(tmp_path):
    with pytest.raises(UserError, match="no such data file, folder or Hub dataset: .*nowhere.jsonl"):
        read_questions(tmp_path / "nowhere.jsonl")
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(UserError, match="not a data file NegVQA is read from"):
        read_questions(tmp_path / "notes.txt")
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(UserError, match="not a parquet file"):
        read_questions(tmp_path / "broken.parquet")


def _hub_cache(cache: Path, repo: str, files: dict[str, bytes]) -> None:
    """A Hugging Face cache holding one snapshot of a dataset repo, as `hf download` leaves it."""
    folder = cache / f"datasets--{repo.replace('/', '--')}"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text("0123456789abcdef0123456789abcdef01234567")
    snapshot = folder / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    for name, data in files.items():
        (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
        (snapshot / name).write_bytes(data)


def test_a_hub_dataset_is_read_offline_from_the_cache(tmp_path):
    rows = "".join(json.dumps(row) + "\n" for row in negvqa_rows()).encode()
    _hub_cache(tmp_path / "hub", "yuhuizhang/NegVQA", {"NegVQA-7379.jsonl": rows, "model_preds/x.jsonl": b"{}\n"})
    code = (
        "from judges.negvqa.data import read_questions\n"
        "data = read_questions('yuhuizhang/NegVQA')\n"
        "print(len(data.questions), data.source, data.questions[5].label, data.questions[5].domain)\n"
        "try:\n    read_questions('yuhuizhang/Elsewhere')\nexcept Exception as error:\n    print(error)\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first == "6 yuhuizhang/NegVQA NegVQA-7379.jsonl row 6 Doc & Chart"
    assert second.startswith("the Hub dataset yuhuizhang/Elsewhere is not in the Hugging Face cache")
    assert "`hf download --repo-type dataset yuhuizhang/Elsewhere`" in second
