"""The public Python API (`negt2ibench.Evaluator`) on tiny random models: the same records as
`score_images` and `negt2ibench score`, every prompt and image form, and checks at the entry."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from dataset_builder.loading import load_prompts
from evaluator.config import PRESETS
from evaluator.pipeline import score_images
from evaluator.resultio import read_results
from negt2ibench import Evaluator, ScoreOutput, parse_prompt
from negt2ibench.cli import main
from negt2ibench.core.errors import MissingWeightsError, UsageError, UserError
from tests.helpers.perception_helpers import make_prompt, random_image, replace_model_perception, tiny_perception
from tests.helpers.space_helpers import RectanglePerception

CONFIG = PRESETS["current"]
PROMPTS = [
    make_prompt("color", ["tv remote", "cup"], "color_pos1_neg0_000"),
    make_prompt("proximity", ["car", "bus"], "proximity_pos1_neg0_000"),
    make_prompt("depth", ["dog", "cat"], "depth_pos0_neg1_000", polarity="negated"),
]


def as_json(record) -> dict:
    return json.loads(record.model_dump_json())


@pytest.fixture
def folder(tmp_path):
    images = tmp_path / "my_model"
    images.mkdir()
    for number, prompt in enumerate(PROMPTS):
        random_image(200 + number, (96, 72)).save(images / f"{prompt.prompt_id}_0.png")
    return images


def test_import_is_light_and_exports_the_api():
    code = (
        "import sys, negt2ibench; assert 'torch' not in sys.modules and 'evaluator' not in sys.modules; "
        "from negt2ibench import Evaluator, load_prompts, parse_prompt; assert 'torch' not in sys.modules; "
        "print(Evaluator.__name__, load_prompts.__module__, parse_prompt.__module__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["Evaluator", "dataset_builder.loading", "dataset_builder.grammar"]
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        import negt2ibench

        negt2ibench.Nope  # noqa: B018 - the attribute access is the test


@pytest.mark.slow
def test_score_gives_the_records_of_score_images_and_of_the_cli(folder, tmp_path, monkeypatch, capsys):
    # 1. the pipeline itself, without the API
    out = tmp_path / "pipeline.jsonl"
    score_images(folder, PROMPTS, tiny_perception(CONFIG), out_path=out, config=CONFIG, progress=False)
    expected = {record.prompt_id: as_json(record) for record in read_results(out)}
    assert len(expected) == 3 and all(record["error"] is None for record in expected.values())
    assert any(obj["present"] for record in expected.values() for obj in record["objects"])  # not all empty

    # 2. `negt2ibench score` (the CLI builds ModelPerception: hand it the tiny models)
    replace_model_perception(monkeypatch, lambda config, **_: tiny_perception(config))
    prompts_file = tmp_path / "prompts.jsonl"
    prompts_file.write_text("".join(prompt.model_dump_json() + "\n" for prompt in PROMPTS))
    cli_out = tmp_path / "cli.jsonl"
    argv = ["score", "--images", str(folder), "--prompts", str(prompts_file), "--out", str(cli_out), "--no-progress"]
    assert main([*argv, "--device", "cpu"]) == 0
    capsys.readouterr()
    assert {record.prompt_id: as_json(record) for record in read_results(cli_out)} == expected

    # 3. the API, one image at a time and in batches
    ev = Evaluator(CONFIG, perception=tiny_perception(CONFIG), prompts=PROMPTS)
    for prompt in PROMPTS:
        output = ev.score(folder / f"{prompt.prompt_id}_0.png", prompt.prompt_id, model_key="my_model")
        assert isinstance(output, ScoreOutput) and set(output.observation.objects) == set(prompt.objects)
        assert as_json(output.record) == expected[prompt.prompt_id]
    paths = [folder / f"{prompt.prompt_id}_0.png" for prompt in PROMPTS]
    images = [paths[0], Image.open(paths[1]), np.asarray(Image.open(paths[2]))]  # path, PIL, array
    records = ev.score_many(images, [p.prompt_id for p in PROMPTS], model_key="my_model", progress=False)
    assert [as_json(record) for record in records] == [expected[p.prompt_id] for p in PROMPTS]


@pytest.mark.slow
def test_a_prompt_as_id_record_or_text_gives_the_same_record():
    corpus = load_prompts(None)
    ev = Evaluator(CONFIG, perception=tiny_perception(CONFIG), prompts=corpus)
    image = random_image(7, (96, 72))
    for prompt_id in ("color_pos1_neg0_013", "depth_pos1_neg0_022"):  # a white cup; a cat in front of a sheep
        record = next(p for p in corpus if p.prompt_id == prompt_id)
        outputs = [ev.score(image, form).record for form in (prompt_id, record, record.prompt)]
        assert outputs[0].prompt_id == prompt_id and outputs[0] == outputs[1] == outputs[2]
    # A text that is no benchmark prompt is parsed into a record with id "custom".
    custom = "a photo of a cup and a dog, where the cup is not near the dog"
    assert ev.prompt(custom) == parse_prompt(custom) and ev.prompt(custom).prompt_id == "custom"


def test_score_many_keeps_going_with_error_rows_like_the_cli():
    ev = Evaluator(CONFIG, perception=RectanglePerception(), prompts=PROMPTS)
    good = random_image(1, (96, 72))
    records = ev.score_many(
        [good, b"not an image", good, good],
        ["color_pos1_neg0_000", "proximity_pos1_neg0_000", "color_pos9_neg9_000", "color_pos1_neg0_000"],
        progress=False,
    )
    assert [r.error is None for r in records] == [True, False, False, True]
    assert records[1].error.startswith("bad image: not a recognised image format")
    assert records[2].error.startswith("unknown prompt id 'color_pos9_neg9_000'")
    assert [r.sample_index for r in records] == [0, 0, 0, 1]  # numbered per prompt by default
    assert [r.model_key for r in records] == ["upload"] * 4


def test_score_many_scores_different_texts_each_with_its_own_record():
    texts = [
        "a photo of a cat and a dog, where the cat is left of the dog",
        "a photo of a cat and a dog, where the cat is not left of the dog",
    ]
    double = RectanglePerception()  # places the first-mentioned object left of the second
    ev = Evaluator(CONFIG, perception=double, prompts=PROMPTS)
    image = random_image(3, (128, 96))
    records = ev.score_many([image, image], texts, batch_size=8, progress=False)
    assert [(r.prompt_id, r.sample_index, r.passed) for r in records] == [("custom", 0, True), ("custom", 1, False)]
    assert records[1].statements[0].cause == "forbidden_rendered"
    assert double.calls == 2  # both texts have the id "custom": one batch each, never mixed up


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: Evaluator("newest"), UsageError, "unknown preset 'newest'"),
        (lambda: Evaluator(batch_size=0), UsageError, "batch_size must be a positive integer, got 0"),
        (lambda: Evaluator(device="tpu"), UsageError, "unknown device 'tpu'"),
        (lambda: Evaluator(device=3), TypeError, "device must be a string"),
        (lambda: Evaluator(perception=RectanglePerception(), device="cpu"), UserError, "either perception or device"),
        (lambda: Evaluator(perception=object()), TypeError, "perception must have an observe"),
        (lambda: Evaluator("no_sam", perception=tiny_perception(CONFIG)), UserError, "built for config 'current'"),
    ],
)
def test_constructor_checks_name_the_argument(make, error, message):
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda ev, img: ev.score(img, PROMPTS[0], model_key=""), UserError, "model_key must be a non-empty"),
        (lambda ev, img: ev.score_many([img], [PROMPTS[0]], model_key="My Model"), UsageError, "model_key 'My Model'"),
        (lambda ev, img: ev.score(img, PROMPTS[0], sample_index=-1), UsageError, "sample_index must be a non-neg"),
        (lambda ev, img: ev.score(img, 42), TypeError, "prompt must be a prompt id"),
        (lambda ev, img: ev.score(img, "  "), UserError, "prompt is empty"),
        (lambda ev, img: ev.score(img, "color_pos9_neg9_000"), UserError, "unknown prompt id"),
        (lambda ev, img: ev.score(img, "a picture of a cat"), UserError, "cannot parse the prompt"),
        (lambda ev, img: ev.score([1, 2], PROMPTS[0]), TypeError, "image must be a PIL image"),
        (lambda ev, img: ev.score(Image.new("RGB", (8, 8)), PROMPTS[0]), UserError, "image: image too small"),
        (lambda ev, img: ev.score(np.zeros((64, 64, 2), np.uint8), PROMPTS[0]), UserError, r"got shape \(64, 64, 2\)"),
        (lambda ev, img: ev.score(np.full((64, 64), 2.0), PROMPTS[0]), UserError, r"values in \[0, 1\]"),
        (lambda ev, img: ev.score_many([img], []), UserError, "same length, got 1 and 0"),
        (lambda ev, img: ev.score_many([img], ["a photo of x"]), UserError, r"prompts\[0\]: cannot parse"),
        (lambda ev, img: ev.score_many([img], [PROMPTS[0]], batch_size=0), UsageError, "batch_size must be a positive"),
        (lambda ev, img: ev.score_many([img], [PROMPTS[0]], sample_indices=[-2]), UserError, r"sample_indices\[0\]"),
    ],
)
def test_bad_input_is_refused_before_any_work(call, error, message):
    double = RectanglePerception()
    ev = Evaluator(CONFIG, perception=double, prompts=PROMPTS)
    with pytest.raises(error, match=message):
        call(ev, random_image(0, (64, 64)))
    assert double.calls == 0


def test_arrays_are_converted_once_at_the_entry():
    ev = Evaluator(CONFIG, perception=RectanglePerception(), prompts=PROMPTS)
    pixels = np.asarray(random_image(4, (96, 72)))
    as_uint8 = ev.score(pixels, PROMPTS[0]).record
    as_float = ev.score(pixels.astype(np.float64) / 255.0, PROMPTS[0]).record
    assert as_uint8 == as_float and as_uint8.passed


def test_load_fails_early_offline_and_lets_a_double_load(tmp_path, monkeypatch):
    class Loading(RectanglePerception):
        loaded: list = []

        def load_all(self, prompts=()):
            self.loaded.append([p.prompt_id for p in prompts])

    double = Loading()
    ev = Evaluator(CONFIG, perception=double, prompts=PROMPTS)
    assert ev.load(["color_pos1_neg0_000", PROMPTS[2]]) is ev
    assert double.loaded == [["color_pos1_neg0_000", "depth_pos0_neg1_000"]]

    monkeypatch.setenv("RF_HOME", str(tmp_path / "no_weights"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    real = Evaluator(device="cpu", weights_dir=tmp_path / "no_weights")
    with pytest.raises(MissingWeightsError, match="model weights for RFDETRSegXLarge"):
        real.load()


@pytest.mark.slow
def test_a_table17_preset_in_the_api():
    evaluator = Evaluator(preset="c2", perception=tiny_perception(PRESETS["c2"]), prompts=PROMPTS)
    assert evaluator.config.detector_label == "Mask R-CNN" and evaluator.config.use_sam
    out = evaluator.score(random_image(7, (96, 72)), "proximity_pos1_neg0_000")
    assert out.record.config_hash == PRESETS["c2"].config_hash and out.record.evaluator == "negt2ibench/c2"
    assert out.record.error is None and out.observation.detections is not None
    with pytest.raises(UserError, match="built for config 'c2'"):  # models of one preset, rules of another
        Evaluator(preset="c6", perception=tiny_perception(PRESETS["c2"]))


def test_one_prompt_rule_for_the_api_explain_and_the_space():
    """`resolve_prompt` is what `Evaluator.prompt`, `explain --prompt/--prompt-id` and the Space's
    typed prompt all use: an id is looked up, and a text that is a benchmark prompt, however it is
    spaced, is that prompt (its id and group); any other text is `custom`."""
    from dataset_builder.records import PromptIndex
    from negt2ibench.api import resolve_prompt

    corpus = PromptIndex(load_prompts(None))
    benchmark = corpus["proximity_pos0_neg1_007"]
    assert resolve_prompt(benchmark, corpus) is benchmark
    assert resolve_prompt(" proximity_pos0_neg1_007 ", corpus) is benchmark
    typed = "  " + benchmark.prompt.replace(" ", "  ") + " "
    assert resolve_prompt(typed, corpus) is benchmark and benchmark.group_id != "custom"
    custom = resolve_prompt("a photo of a red cup", corpus)
    assert custom.prompt_id == "custom" and custom == parse_prompt("a photo of a red cup")
    with pytest.raises(UserError, match="unknown prompt id 'proximity_pos0_neg1_700'"):
        resolve_prompt("proximity_pos0_neg1_700", corpus)
    with pytest.raises(UserError, match="^cannot parse the prompt"):
        resolve_prompt("hello world", corpus)
    with pytest.raises(UserError, match="prompt is empty"):
        resolve_prompt("  ", corpus)
    assert Evaluator(CONFIG, perception=tiny_perception(CONFIG), prompts=corpus).prompt(typed) is benchmark
