"""Real two-process runs under torchrun on CPU (gloo): `generate` and `score_images` split, merge and resume.

The other tests simulate ranks inside one process; these launch `python -m torch.distributed.run
--nproc_per_node 2` as a subprocess, offline, with the tiny random models of the test helpers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dataset_builder.layout import rank_path, split_files
from evaluator.config import PRESETS
from evaluator.pipeline import score_images
from evaluator.resultio import read_results
from evaluator.results import ResultRecord
from generation.work import image_seed
from negt2ibench.core.errors import UserError
from tests.helpers.generation_helpers import TINY_SIZE, three_prompts, tiny_sd_pipeline, write_prompts_dataset
from tests.helpers.launch_helpers import LAUNCH_TIMEOUT_S, process_env, run_checked, torchrun
from tests.helpers.perception_helpers import make_prompt, random_image

# -- generation ------------------------------------------------------------------------------


def shard_rows(path: Path) -> list[dict]:
    return pq.read_table(path, columns=["prompt_id", "sample_index", "seed"]).to_pylist()


@pytest.mark.slow
@pytest.mark.timeout(3 * LAUNCH_TIMEOUT_S)
def test_torchrun_generate_splits_the_work_between_two_cpu_processes_and_resumes(tmp_path):
    model = tmp_path / "tiny-sd"
    tiny_sd_pipeline().save_pretrained(model)
    prompts = three_prompts()
    data = write_prompts_dataset(prompts, tmp_path / "data")
    argv = [
        "-m",
        "negt2ibench",
        "generate",
        "--model-id",
        str(model),
        "--key",
        "tiny",
        "--out",
        str(data),
        "--limit",
        "3",
        "--num-images",
        "2",
        "--device",
        "cpu",
        "--steps",
        "2",
        "--resolution",
        str(TINY_SIZE),
        "--batch-size",
        "2",
        "--quiet",
    ]

    first = torchrun(*argv)

    assert "rank 0: 3 generated" in first and "rank 1: 3 generated" in first, first[-3000:]
    assert "complete: every expected image present exactly once" in first
    shards = split_files(data, "tiny")
    by_rank = {path.name.split("-")[1]: shard_rows(path) for path in shards}
    assert sorted(by_rank) == ["r000", "r001"] and len(shards) == 2
    # Contiguous prompt-major shares: rank 0 the first three (prompt, sample) pairs, rank 1 the rest.
    expected = [(p.prompt_id, index) for p in prompts for index in range(2)]
    assert [(row["prompt_id"], row["sample_index"]) for row in by_rank["r000"]] == expected[:3]
    assert [(row["prompt_id"], row["sample_index"]) for row in by_rank["r001"]] == expected[3:]
    assert all(
        row["seed"] == image_seed(row["prompt_id"], row["sample_index"]) for rows in by_rank.values() for row in rows
    )

    from datasets import load_dataset

    split = load_dataset(str(data), "images", split="tiny", cache_dir=str(tmp_path / "cache"))
    assert sorted(zip(split["prompt_id"], split["sample_index"], strict=False)) == sorted(expected)
    assert {image.size for image in split["image"]} == {(TINY_SIZE, TINY_SIZE)}

    stamps = {path: path.stat().st_mtime_ns for path in shards}
    again = torchrun(*argv)

    assert "rank 0: 0 generated" in again and "rank 1: 0 generated" in again
    assert again.count("3 already done") == 2
    assert "complete: every expected image present exactly once" in again
    assert {path: path.stat().st_mtime_ns for path in split_files(data, "tiny")} == stamps


# -- scoring ---------------------------------------------------------------------------------

SCORE_SCRIPT = '''
"""Score FOLDER into OUT with the tiny random perception models; each rank writes RESULTS/rank{i}.json."""
import json
import sys
from pathlib import Path

from accelerate import PartialState

from tests.helpers.perception_helpers import tiny_perception
from dataset_builder.loading import load_prompts
from evaluator.config import PRESETS
from evaluator.pipeline import score_images

folder, prompts, out, reports = (Path(arg) for arg in sys.argv[1:5])
summary = score_images(folder, load_prompts(prompts), tiny_perception(), out_path=out, config=PRESETS["current"],
                       model_key="tiny", batch_size=2, progress=False)
state = PartialState()
reports.mkdir(exist_ok=True)
(reports / f"rank{state.process_index}.json").write_text(json.dumps({
    "world": state.num_processes, "backend": state.backend, "distributed_type": state.distributed_type.value,
    "total": summary.total, "new": summary.scored + summary.errors, "already_done": summary.already_done,
}))
'''

SCORED_PROMPTS = [
    make_prompt("color", ["cup"], "color_pos1_neg0_000"),
    make_prompt("color", ["bus"], "color_pos0_neg1_000", polarity="negated"),
    make_prompt("directional", ["cat", "dog"], "directional_pos1_neg0_000"),
]


def verdict(record: ResultRecord) -> tuple:
    """What a record decides, without raw scores (float noise may differ between batchings)."""
    return (
        record.passed,
        record.error,
        tuple((s.index, s.satisfied, s.cause, tuple(s.observed), s.dead_zone_pass) for s in record.statements),
        tuple((o.name, o.present) for o in record.objects),
    )


@pytest.mark.slow
@pytest.mark.timeout(4 * LAUNCH_TIMEOUT_S)
def test_torchrun_score_images_splits_merges_once_and_matches_one_process(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    keys = []
    for number, prompt in enumerate(SCORED_PROMPTS):
        for sample in range(2):
            random_image(10 * number + sample).save(folder / f"{prompt.prompt_id}_{sample}.png")
            keys.append(("tiny", prompt.prompt_id, sample))
    random_image(99).save(folder / "color_pos9_neg9_000_0.png")  # unknown prompt id: an error row
    keys.append(("tiny", "color_pos9_neg9_000", 0))
    prompts = write_prompts_dataset(SCORED_PROMPTS, tmp_path / "prompts")
    script = tmp_path / "score_tiny.py"
    script.write_text(SCORE_SCRIPT)
    out, reports = tmp_path / "two" / "results.jsonl", tmp_path / "reports"

    torchrun(str(script), str(folder), str(prompts), str(out), str(reports))

    ranks = [json.loads((reports / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert [(r["world"], r["backend"], r["distributed_type"]) for r in ranks] == [(2, "gloo", "MULTI_CPU")] * 2
    assert [r["new"] for r in ranks] == [4, 3] and all(r["total"] == 7 for r in ranks)
    merged = read_results(out)
    assert sorted(record.key for record in merged) == sorted(keys)  # each image exactly once
    shares = [read_results(rank_path(out, rank)) for rank in (0, 1)]  # kept next to OUT, as documented
    assert [len(share) for share in shares] == [4, 3]
    assert {r.key for r in shares[0]}.isdisjoint({r.key for r in shares[1]})
    assert {r.key for share in shares for r in share} == set(keys)
    unknown = next(record for record in merged if record.prompt_id == "color_pos9_neg9_000")
    assert unknown.error and unknown.error.startswith("unknown prompt id")

    single_out = tmp_path / "one" / "results.jsonl"
    env = process_env()
    run_checked(
        [sys.executable, str(script), str(folder), str(prompts), str(single_out), str(tmp_path / "single")], env
    )
    assert json.loads((tmp_path / "single" / "rank0.json").read_text())["world"] == 1
    assert not rank_path(single_out, 0).exists()
    single = {record.key: verdict(record) for record in read_results(single_out)}
    assert {record.key: verdict(record) for record in merged} == single

    torchrun(str(script), str(folder), str(prompts), str(out), str(reports))  # rerun: everything is merged

    again = [json.loads((reports / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    assert [(r["new"], r["already_done"]) for r in again] == [(0, 4), (0, 3)]
    assert [record.key for record in read_results(out)] == [record.key for record in merged]


def test_a_launcher_world_that_accelerate_does_not_see_is_refused_before_scoring(tmp_path, monkeypatch):
    """In one process: WORLD_SIZE=2 but a state of 1 process would make every process score everything."""
    import accelerate

    class SingleState:
        num_processes, process_index = 1, 0

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(accelerate, "PartialState", lambda **kwargs: SingleState())
    folder = tmp_path / "images"
    folder.mkdir()
    random_image(0).save(folder / f"{SCORED_PROMPTS[0].prompt_id}_0.png")
    with pytest.raises(UserError, match="launched as 2 processes but accelerate sees 1"):
        score_images(
            folder,
            SCORED_PROMPTS,
            perception=None,
            out_path=tmp_path / "r.jsonl",
            config=PRESETS["current"],
            model_key="tiny",
            progress=False,
        )
    assert not (tmp_path / "r.jsonl").exists()
