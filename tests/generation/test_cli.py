"""CLI of generation: `generate` end to end from a local pipeline folder, errors, import-images, merge-images."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from dataset_builder.layout import split_files
from generation.shards import existing_keys
from negt2ibench.cli import main
from tests.helpers.generation_helpers import TINY_SIZE, three_prompts, tiny_sd_pipeline, write_prompts_dataset


@pytest.fixture(scope="module")
def local_pipeline(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-sd")
    tiny_sd_pipeline().save_pretrained(folder)
    return folder


@pytest.fixture()
def dataset(tmp_path) -> Path:
    return write_prompts_dataset(three_prompts(), tmp_path / "data")


def png_file(path: Path, color=(200, 10, 10)) -> Path:
    Image.new("RGB", (16, 16), color).save(path, format="PNG")
    return path


@pytest.mark.slow
def test_generate_from_a_local_diffusers_folder_resumes_and_merges(local_pipeline, dataset, capsys):
    argv = [
        "generate",
        "--model-id",
        str(local_pipeline),
        "--key",
        "tiny_local",
        "--steps",
        "2",
        "--resolution",
        str(TINY_SIZE),
        "--out",
        str(dataset),
        "--num-images",
        "2",
        "--batch-size",
        "2",
        "--quiet",
    ]
    assert main(argv + ["--limit", "2"]) == 0
    assert len(existing_keys(dataset, "tiny_local")) == 4
    assert main(argv) == 0  # resumes: only the third prompt is new
    out = capsys.readouterr()
    assert "2 generated" in out.err and "4 already done" in out.err
    assert "complete: every expected image present exactly once" in out.out
    assert "images/tiny_local-*.parquet" in (dataset / "README.md").read_text()
    assert main(["merge-images", "--dir", str(dataset), "--key", "tiny_local", "--num-images", "2"]) == 0
    assert main(["merge-images", "--dir", str(dataset), "--key", "tiny_local"]) == 1  # 4 per prompt expected
    assert "missing 6 images" in capsys.readouterr().out


def exit_code(argv: list[str]) -> int:
    """main's return value, or the code of argparse's own usage error (it exits)."""
    try:
        return main(argv)
    except SystemExit as exited:
        return exited.code


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["generate", "--model-id", "some/pipeline"], "--model-id needs --key"),
        (["generate", "--model", "sd_1_5", "--model-id", "some/pipeline"], "either --model KEY or --model-id"),
    ],
)
def test_a_model_named_two_ways_or_by_hub_id_alone_is_a_usage_error(argv, message, dataset, capsys):
    # fast, beside the slow table below: checked before any pipeline is looked for
    assert exit_code(argv + ["--out", str(dataset)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["generate", "--model", "sd_1_5", "--limit", "1"], 2, "not on this machine"),
        (["generate", "--model", "blip3o_next"], 1, "negt2ibench import-images --key blip3o_next"),
        # Wrong, missing or conflicting options are usage errors: exit 2, as argparse's own.
        (["generate", "--model", "sd_2_1"], 2, "unknown model key 'sd_2_1'"),
        (["generate", "--model-id", "some/pipeline"], 2, "--model-id needs --key"),
        (["generate", "--model-id", "some/pipeline", "--key", "Bad-Key"], 2, "not a valid split name"),
        (["generate", "--model", "sd_1_5", "--steps", "3"], 2, "only for --model-id"),
        (["generate", "--model", "sd_1_5", "--categories", "colour"], 2, "unknown category colour"),
        (["generate", "--model", "sd_1_5", "--batch-size", "0"], 2, "must be a positive integer"),
    ],
)
def test_generate_errors_are_one_clear_line(argv, code, message, dataset, capsys):
    assert exit_code(argv + ["--out", str(dataset)]) == code
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not split_files(dataset, "sd_1_5")


def test_generate_list_prints_every_model(capsys):
    assert main(["generate", "--list"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines[1:]] == [
        "sd_1_5",
        "sd_1_5_negationclip",
        "sd_3_5_large",
        "flux_2_dev",
        "flux_2_klein_9b",
        "z_image_turbo",
        "hunyuanimage_2_1",
        "janus_pro_7b",
        "blip3o_next",
    ]


def test_import_images_validates_everything_before_writing(dataset, tmp_path, capsys):
    folder = tmp_path / "made-elsewhere"
    folder.mkdir()
    png_file(folder / "color_pos1_neg0_000_0.png")
    png_file(folder / "color_pos0_neg1_000_1.png", (1, 2, 3))
    png_file(folder / "color_pos9_neg9_000_0.png")  # unknown prompt id
    (folder / "material_pos1_neg0_001_0.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")  # not decodable
    Image.new("RGB", (8, 8)).save(folder / "material_pos1_neg0_001_1.png", format="JPEG")  # lossy, misnamed
    (folder / "notes.txt").write_text("ignored")

    argv = [
        "import-images",
        "--key",
        "elsewhere",
        "--dir",
        str(folder),
        "--out",
        str(dataset),
        "--model-id",
        "lab/model",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "nothing imported" in err and "unknown prompt id 'color_pos9_neg9_000'" in err
    assert "material_pos1_neg0_001_0.png: not a decodable image" in err and "is JPEG, not PNG" in err
    assert not split_files(dataset, "elsewhere")

    assert main(argv + ["--skip-bad", "--num-images", "2"]) == 0
    out = capsys.readouterr().out
    assert "imported 2" in out and "3 files not imported" in out and "ignored 1 files" in out
    assert "gaps: 4 of 6 expected images are missing (3 prompts × 2 images each)" in out
    import pyarrow.parquet as pq

    [shard] = split_files(dataset, "elsewhere")
    rows = {(r["prompt_id"], r["sample_index"]): r for r in pq.read_table(shard).to_pylist()}
    original = (folder / "color_pos1_neg0_000_0.png").read_bytes()
    assert rows[("color_pos1_neg0_000", 0)]["image"]["bytes"] == original  # stored byte for byte
    assert rows[("color_pos1_neg0_000", 0)]["model_id"] == "lab/model"
    assert Image.open(io.BytesIO(rows[("color_pos0_neg1_000", 1)]["image"]["bytes"])).getpixel((0, 0)) == (1, 2, 3)

    assert main(argv + ["--skip-bad"]) == 0  # a second import adds nothing
    assert "imported 0, already present 2" in capsys.readouterr().out
    assert len(split_files(dataset, "elsewhere")) == 1


def test_import_images_counts_the_missing_images_of_four_per_prompt(dataset, tmp_path, capsys):
    folder = tmp_path / "first-samples"
    folder.mkdir()
    for prompt in three_prompts():  # sample 0 of each prompt only
        png_file(folder / f"{prompt.prompt_id}_0.png")
    assert main(["import-images", "--key", "firsts", "--dir", str(folder), "--out", str(dataset)]) == 0
    out = capsys.readouterr().out
    # The benchmark scores 4 images a prompt: 3 of 12 are here, 9 missing (not 0, as "largest index + 1" gave).
    assert "gaps: 9 of 12 expected images are missing (3 prompts × 4 images each)" in out


def test_merge_images_without_shards_is_a_clear_error(dataset, capsys):
    assert main(["merge-images", "--dir", str(dataset), "--key", "nothing_here"]) == 1
    assert "no shards of split 'nothing_here'" in capsys.readouterr().err


@pytest.mark.slow
def test_text_encoder_override_is_swapped_in(local_pipeline, tmp_path):
    """sd_1_5_negationclip's mechanism: a CLIPTextModel from another repo (here a full CLIPModel folder)."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    from generation.backends import load_generator
    from generation.registry import ModelSpec

    base = tiny_sd_pipeline().text_encoder.config
    clip = CLIPModel(
        CLIPConfig(
            text_config=base.to_dict(),
            vision_config=dict(
                hidden_size=16,
                intermediate_size=32,
                num_hidden_layers=1,
                num_attention_heads=2,
                image_size=32,
                patch_size=16,
            ),
            projection_dim=16,
        )
    )
    with torch.no_grad():
        clip.text_model.final_layer_norm.bias.fill_(0.5)  # a weight the base encoder does not have
    clip.save_pretrained(tmp_path / "negation-clip")
    spec = ModelSpec(
        key="tiny_negclip",
        hub_id=str(local_pipeline),
        pipeline_class="diffusers.StableDiffusionPipeline",
        steps=2,
        height=TINY_SIZE,
        width=TINY_SIZE,
        dtype="float32",
        component_overrides={"text_encoder": ("transformers.CLIPTextModel", str(tmp_path / "negation-clip"), None)},
    )
    generator = load_generator(spec, "cpu")
    bias = generator.pipeline.text_encoder.final_layer_norm.bias
    assert torch.all(bias == 0.5)
    assert generator(["a red cup"], [3])[0].image.size == (TINY_SIZE, TINY_SIZE)


def test_import_images_messages_say_what_is_wrong(dataset, tmp_path, capsys):
    folder = tmp_path / "made-elsewhere"
    folder.mkdir()
    png_file(folder / "color_pos1_neg0_000.png")  # the sample index is what is missing
    (folder / "color_pos0_neg1_000_0.png").write_bytes(b"GIF89a not really")  # not an image at all
    argv = ["import-images", "--key", "elsewhere", "--dir", str(folder), "--out", str(dataset)]
    for extra in ([], ["--skip-bad"]):  # --skip-bad that leaves nothing to import fails too
        assert main(argv + extra) == 1
        err = capsys.readouterr().err
        assert err.startswith("error: nothing imported: none of the 2 PNG files can be imported: ")
        assert "color_pos1_neg0_000.png: no sample index; name it color_pos1_neg0_000_0.png" in err
        assert "color_pos0_neg1_000_0.png: not an image (no image format recognised in its 17 bytes)" in err
        assert "BytesIO" not in err and "unknown prompt id" not in err
    assert not split_files(dataset, "elsewhere")
