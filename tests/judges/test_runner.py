"""`judge_images`: modes and their files, shared questions, resume, error rows, ranks, cost; image sources.

A scripted adapter (a test double, defined here) answers by question text, so every record is exact.
The real model path is covered in test_judges_models.py and test_judges_cli.py.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from dataset_builder.grammar import parse_prompt
from dataset_builder.layout import rank_path
from evaluator.resultio import read_results
from judges.adapters import JudgeAdapter
from judges.registry import JUDGES_VERSION, REGISTRY
from judges.runner import judge_images, mode_out_path
from judges.sources import annotation_sample_items, judge_items
from negt2ibench.core.errors import UserError
from tests.helpers.launch_helpers import FakeState

COLOR = parse_prompt("a photo of a red cup and a non-blue bowl").model_copy(
    update={"prompt_id": "color_pos1_neg1_000", "group_id": "color_load2_000"}
)
RELATION = parse_prompt("a photo of a backpack and a fork, where the backpack is not left of the fork").model_copy(
    update={"prompt_id": "directional_pos0_neg1_000", "group_id": "directional_load1_000"}
)
PROMPTS = [COLOR, RELATION]
BROKEN_SIZE = (33, 33)  # the scripted judge fails on an image of this size


class ScriptedJudge(JudgeAdapter):
    """Answers P("yes") from a table of question texts (default 0.9); records what it was asked."""

    def __init__(self, answers: dict[str, float] | None = None, batch_size: int = 4):
        self.spec = REGISTRY["qwen3_vl_8b"]
        self.batch_size = batch_size
        self.device = torch.device("cpu")
        self.dtype_name = "float32"
        self.answers = answers or {}
        self.asked: list[str] = []
        self.loads = 0

    def load(self) -> None:
        self.loads += 1

    def yes_probability(self, images, questions):
        if any(image.size == BROKEN_SIZE for image in images):
            raise RuntimeError("out of memory")
        self.asked.extend(questions)
        return [self.answers.get(question, 0.9) for question in questions]


def write_folder(folder: Path, samples: int = 2, sizes: dict | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for prompt in PROMPTS:
        for sample in range(samples):
            size = (sizes or {}).get((prompt.prompt_id, sample), (40, 32))
            Image.new("RGB", size, (180, 20, 20)).save(folder / f"{prompt.prompt_id}_{sample}.png")
    return folder


def test_mode_all_writes_one_file_per_mode_and_asks_shared_questions_once(tmp_path):
    judge = ScriptedJudge({"Is the bowl blue?": 0.8, "Is the bowl not blue?": 0.3})
    items = judge_items(write_folder(tmp_path / "sd_1_5"))
    summary = judge_images(items, PROMPTS, judge, out_path=tmp_path / "judge.jsonl", mode="all", progress=False)

    paths = {mode: tmp_path / f"judge.{mode}.jsonl" for mode in ("whole", "pos", "neg")}
    assert {mode: counts.path for mode, counts in summary.modes.items()} == paths
    records = {mode: {r.key: r for r in read_results(path)} for mode, path in paths.items()}
    key = ("sd_1_5", COLOR.prompt_id, 0)
    assert all(len(by_key) == 4 for by_key in records.values())
    assert [records[mode][key].evaluator for mode in paths] == [
        "qwen3_vl_8b/whole",
        "qwen3_vl_8b/pos",
        "qwen3_vl_8b/neg",
    ]
    # pos: "Is the bowl blue?" 0.8 → the negated statement fails; neg: "not blue?" 0.3 → fails too.
    assert [q.question for q in records["pos"][key].questions] == [
        "Is there a cup in the image?",
        "Is there a bowl in the image?",
        "Is the cup red?",
        "Is the bowl blue?",
    ]
    assert records["pos"][key].statements[1].cause == "forbidden_rendered"
    assert records["neg"][key].questions[3].p_satisfied == 0.3 and records["neg"][key].passed is False
    assert records["whole"][key].passed is True and records["whole"][key].score == 0.9
    assert {r.evaluator_version for by_key in records.values() for r in by_key.values()} == {JUDGES_VERSION}
    assert len({records[mode][key].config_hash for mode in paths}) == 3
    # Per image: whole 1 + pos (color 4, relation 3) + the one neg-only question; two samples each.
    assert summary.questions == 2 * 6 + 2 * 5 and summary.images == 4 and len(judge.asked) == 22
    assert summary.questions_per_image("pos") == (4 + 3) / 2 and summary.questions_per_image("whole") == 1
    assert judge.loads == 1


def test_resume_skips_written_keys_per_mode(tmp_path):
    folder = write_folder(tmp_path / "sd_1_5")
    out = tmp_path / "pos.jsonl"
    first = judge_images(judge_items(folder), PROMPTS, ScriptedJudge(), out_path=out, limit=3, progress=False)
    assert first.modes["pos"].judged == 3 and len(read_results(out)) == 3
    again = ScriptedJudge()
    second = judge_images(judge_items(folder), PROMPTS, again, out_path=out, progress=False)
    assert (second.modes["pos"].already_done, second.modes["pos"].judged, second.images) == (3, 1, 1)
    assert again.asked == [  # only the last image (the relation prompt, sample 1) was asked about
        "Is there a backpack in the image?",
        "Is there a fork in the image?",
        "Is the backpack left of the fork?",
    ]
    assert len(read_results(out)) == 4
    # A third run finds every key written and asks nothing.
    third = ScriptedJudge()
    judge_images(judge_items(folder), PROMPTS, third, out_path=tmp_path / "pos.jsonl", mode="pos", progress=False)
    assert third.asked == []


def test_bad_images_unknown_prompts_and_failing_forwards_become_error_rows(tmp_path):
    folder = write_folder(tmp_path / "m", sizes={(COLOR.prompt_id, 1): BROKEN_SIZE})
    (folder / f"{RELATION.prompt_id}_1.png").write_bytes(b"not a png")
    Image.new("RGB", (40, 32)).save(folder / "unknown_pos1_neg0_000_0.png")
    summary = judge_images(
        judge_items(folder), PROMPTS, ScriptedJudge(batch_size=8), out_path=tmp_path / "r.jsonl", progress=False
    )
    by_key = {(r.prompt_id, r.sample_index): r for r in read_results(tmp_path / "r.jsonl")}
    assert by_key[(COLOR.prompt_id, 1)].error == "judge failed: RuntimeError: out of memory"
    assert by_key[(RELATION.prompt_id, 1)].error.startswith("bad image: ")
    assert by_key[("unknown_pos1_neg0_000", 0)].error.startswith("unknown prompt id 'unknown_pos1_neg0_000'")
    assert by_key[(COLOR.prompt_id, 0)].error is None and by_key[(RELATION.prompt_id, 0)].error is None
    assert summary.error_reasons == {"bad image": 1, "judge failed": 1, "unknown prompt id": 1}
    assert summary.modes["pos"].errors == 3 and summary.modes["pos"].judged == 2


def test_summary_reports_the_cost_apart_from_loading(tmp_path):
    summary = judge_images(
        judge_items(write_folder(tmp_path / "m")),
        PROMPTS,
        ScriptedJudge(),
        out_path=tmp_path / "r.jsonl",
        progress=False,
    )
    data = summary.to_dict()
    assert (data["images_judged"], data["questions_asked"]) == (4, 14)
    assert data["seconds_per_question"] == pytest.approx(summary.seconds / 14)
    assert data["seconds_per_image"] == pytest.approx(summary.seconds / 4)
    assert data["modes"]["pos"]["questions_per_image"] == 3.5
    assert data["memory_kind"] == "rss" and summary.peak_memory_bytes > 10 * 2**20
    assert data["load_seconds"] >= 0 and data["device"] == "cpu" and data["dtype"] == "float32"
    assert data["params"] == "8B"
    # The run record beside the results holds the same summary; a rerun with nothing new keeps it.
    assert json.loads((tmp_path / "r.run.json").read_text()) == json.loads(json.dumps(data))
    again = judge_images(
        judge_items(write_folder(tmp_path / "m")),
        PROMPTS,
        ScriptedJudge(),
        out_path=tmp_path / "r.jsonl",
        progress=False,
    )
    assert again.images == 0 and json.loads((tmp_path / "r.run.json").read_text())["images_judged"] == 4
    line = summary.line()
    assert "pos: 4 new (0 passed, 0 errors), 0 already done, 3.50 q/img" in line
    assert "14 questions" in line and "s/question" in line and "model load" in line and "peak RSS" in line
    json.dumps(data)


def test_ranks_write_their_own_files_and_the_main_process_merges_each_mode(tmp_path, monkeypatch):
    import accelerate

    items = judge_items(write_folder(tmp_path / "m"))
    out = tmp_path / "judge.jsonl"
    for rank in (1, 0):  # rank 0 (main) runs last and merges
        monkeypatch.setattr(accelerate, "PartialState", lambda rank=rank: FakeState(rank))
        summary = judge_images(items, PROMPTS, ScriptedJudge(), out_path=out, mode="all", progress=False)
        assert (summary.rank, summary.world) == (rank, 2)
    for mode in ("whole", "pos", "neg"):
        merged = mode_out_path(out, mode, several=True)
        assert len(read_results(rank_path(merged, 0))) == 2 and len(read_results(rank_path(merged, 1))) == 2
        assert sorted(r.key for r in read_results(merged)) == sorted(item.key for item in items)


# -- sources ---------------------------------------------------------------------------------------


def png(color: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 32), color).save(buffer, format="PNG")
    return buffer.getvalue()


def write_dataset(root: Path) -> Path:
    (root / "images").mkdir(parents=True)
    for key, color in (("sd_1_5", (255, 0, 0)), ("flux", (0, 0, 255))):
        rows = [
            {"prompt_id": p.prompt_id, "sample_index": s, "image": {"bytes": png(color), "path": None}}
            for p in PROMPTS
            for s in range(2)
        ]
        pq.write_table(pa.Table.from_pylist(rows), root / "images" / f"{key}-r000-00000.parquet")
    return root


def test_annotation_sample_lines_resolve_across_splits(tmp_path):
    data = write_dataset(tmp_path / "data")
    sample = tmp_path / "sample.jsonl"
    lines = [
        {"prompt_id": COLOR.prompt_id, "model_key": "flux", "sample_index": 1, "images": "data", "annotator": "x"},
        {"prompt_id": RELATION.prompt_id, "model_key": "sd_1_5", "sample_index": 0, "images": str(data)},
        {"prompt_id": RELATION.prompt_id, "model_key": "sd_1_5", "sample_index": 0, "dataset": str(data), "row": 2},
    ]
    sample.write_text("".join(json.dumps(line) + "\n" for line in lines) + "\n")
    # "data" is found next to the sample file; the third line ("dataset", as SampleItem names it) is a duplicate.
    items = annotation_sample_items(sample)
    assert [item.key for item in items] == [("flux", COLOR.prompt_id, 1), ("sd_1_5", RELATION.prompt_id, 0)]
    assert Image.open(io.BytesIO(items[0].image.fetch())).getpixel((0, 0)) == (0, 0, 255)
    summary = judge_images(items, PROMPTS, ScriptedJudge(), out_path=tmp_path / "r.jsonl", progress=False)
    assert summary.modes["pos"].judged == 2
    assert sorted(r.model_key for r in read_results(tmp_path / "r.jsonl")) == ["flux", "sd_1_5"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            '{"prompt_id": "a", "model_key": "sd_1_5", "sample_index": 0}',
            r"record: Value error, needs images \(or dataset\)",
        ),
        ('{"model_key": "sd_1_5", "sample_index": 0, "dataset": ""}', r"prompt_id: Field required"),
        (
            '{"prompt_id": "a", "model_key": "SD", "sample_index": 0, "images": "d"}',
            r"model_key: Value error, must be a split",
        ),
        (
            '{"prompt_id": "a", "model_key": "sd_1_5", "sample_index": "0", "images": "d"}',
            "sample_index: Input should be",
        ),
        ("[1, 2]", r"record: Input should be an object"),
        ("{oops", r"not JSON"),
    ],
)
def test_bad_annotation_sample_lines_are_named(tmp_path, line, message):
    sample = tmp_path / "sample.jsonl"
    sample.write_text(line + "\n")
    with pytest.raises(UserError, match=r"sample\.jsonl:1: not (a sample record \(|JSON)") as error:
        judge_items(sample)
    assert re.search(message, str(error.value)), str(error.value)


def test_annotation_sample_naming_a_missing_image(tmp_path):
    data = write_dataset(tmp_path / "data")
    sample = tmp_path / "sample.jsonl"
    sample.write_text(
        json.dumps({"prompt_id": COLOR.prompt_id, "model_key": "flux", "sample_index": 7, "images": str(data)}) + "\n"
    )
    with pytest.raises(UserError, match=r"sample\.jsonl: no image color_pos1_neg1_000 sample 7 in split flux"):
        judge_items(sample)


@pytest.mark.slow
def test_report_reads_judge_records_of_every_mode_unchanged(tmp_path, capsys):
    from negt2ibench.cli import main

    items = judge_items(write_folder(tmp_path / "sd_1_5"))
    judge_images(items, PROMPTS, ScriptedJudge(), out_path=tmp_path / "judge.jsonl", mode="all", progress=False)
    # Every "yes" is 0.9: whole passes all four images; pos fails both prompts' negated statements.
    for mode, passed in (("whole", 4), ("pos", 0), ("neg", 4)):
        assert main(["report", str(tmp_path / f"judge.{mode}.jsonl"), "--out", str(tmp_path / mode)]) == 0
        report = json.loads((tmp_path / mode / "report.json").read_text())
        assert report["provenance"]["sd_1_5"]["evaluator_version"] == JUDGES_VERSION
        assert (report["table3"]["sd_1_5"]["images"], report["table3"]["sd_1_5"]["passed"]) == (4, passed)
