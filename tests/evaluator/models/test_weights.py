"""`download-models`: the files the loaders read, with sizes; `--check` loads each model offline."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from huggingface_hub.file_download import DryRunFileInfo

import evaluator.perception as perception_module
from evaluator.config import PRESETS
from evaluator.models import weights
from negt2ibench.cli import main
from tests.helpers.perception_helpers import tiny_depth, tiny_detector, tiny_sam, tiny_siglip

# facebook/sam2.1-hiera-small as the Hub lists it (model card, files and versions).
SAM_REPO_FILES = [
    ".gitattributes",
    "README.md",
    "config.json",
    "model.safetensors",
    "preprocessor_config.json",
    "processor_config.json",
    "sam2.1_hiera_s.yaml",
    "sam2.1_hiera_small.pt",
]


def test_each_preset_lists_its_models_from_its_config():
    roles = {name: [model.role for model in weights.preset_models(config)] for name, config in PRESETS.items()}
    assert roles["current"] == ["detector", "masks", "attributes", "depth"]
    assert roles["no_sam"] == ["detector", "attributes", "depth"]
    current = {model.role: model for model in weights.preset_models(PRESETS["current"])}
    assert (current["detector"].kind, current["detector"].source) == ("rfdetr", "rf-detr-seg-xlarge.pt")
    assert current["masks"].source == PRESETS["current"].sam_model_id == "facebook/sam2.1-hiera-small"
    other = PRESETS["current"].replace(depth_model_id="depth-anything/Depth-Anything-V2-Small-hf")
    assert weights.preset_models(other)[-1].source == "depth-anything/Depth-Anything-V2-Small-hf"


def test_only_the_files_transformers_reads_are_fetched_not_sams_original_pt():
    from huggingface_hub.utils import filter_repo_objects

    kept = list(filter_repo_objects(SAM_REPO_FILES, allow_patterns=list(weights.HUB_FILES)))
    assert kept == ["config.json", "model.safetensors", "preprocessor_config.json", "processor_config.json"]


def test_the_check_loads_with_the_classes_perception_uses(monkeypatch):
    used = {}

    class Stop(Exception):
        pass

    def recording_load_hf(model_class, processor_class, model_id, **kwargs):
        used[model_id] = (f"transformers.{model_class.__name__}", f"transformers.{processor_class.__name__}")
        raise Stop

    monkeypatch.setattr(perception_module, "load_hf", recording_load_hf)
    perception = perception_module.ModelPerception(PRESETS["current"], device="cpu")
    for role in ("segmenter", "attributes", "depth"):
        with pytest.raises(Stop):
            getattr(perception, role)
    listed = {m.source: (m.model_class, m.processor_class) for m in weights.preset_models(PRESETS["current"])}
    assert {source: classes for source, classes in listed.items() if source in used} == used
    assert len(used) == 3


def test_download_shows_sizes_and_fetches_only_config_and_weights(tmp_path, monkeypatch, capsys):
    import huggingface_hub
    import rfdetr.assets.model_weights as rf_weights

    calls = []

    def fake_snapshot_download(repo_id, *, cache_dir=None, allow_patterns=None, dry_run=False, **kwargs):
        calls.append((repo_id, cache_dir, list(allow_patterns or []), dry_run))
        if dry_run:
            return [
                DryRunFileInfo("c0ffee", 1_500, "config.json", "", is_cached=True, will_download=False),
                DryRunFileInfo("c0ffee", 184_400_000, "model.safetensors", "", is_cached=False, will_download=True),
            ]
        return str(Path(cache_dir) / repo_id)

    def fake_rfdetr_download(path, **kwargs):
        Path(path).write_bytes(b"weights")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_snapshot_download)
    monkeypatch.setattr(rf_weights, "download_pretrain_weights", fake_rfdetr_download)
    monkeypatch.setattr(weights, "_remote_size", lambda url: 138_700_000)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # a machine with internet access (the transfers are fakes)
    assert main(["download-models", "--dir", str(tmp_path / "w")]) == 0
    out = capsys.readouterr().out
    assert "RFDETRSegXLarge (rf-detr-seg-xlarge.pt): 138.7 MB" in out
    assert "SAM 2.1 (facebook/sam2.1-hiera-small): 2 files, 184.4 MB (184.4 MB to download)" in out
    assert (tmp_path / "w" / "rfdetr" / "rf-detr-seg-xlarge.pt").read_bytes() == b"weights"
    assert f"export HF_HUB_CACHE={tmp_path / 'w' / 'hub'}" in out and "negt2ibench selftest" in out
    hub_repos = [
        PRESETS["current"].sam_model_id,
        PRESETS["current"].attribute_model_id,
        PRESETS["current"].depth_model_id,
    ]
    assert [call[0] for call in calls] == [repo for repo in hub_repos for _ in (0, 1)]
    assert all(call[2] == ["*.json", "*.safetensors"] and call[1] == str(tmp_path / "w" / "hub") for call in calls)


def test_check_only_without_weights_names_each_missing_model_and_exits_2(tmp_path, capsys):
    code = main(["download-models", "--check-only", "--dir", str(tmp_path / "none"), "--preset", "no_sam"])
    out = capsys.readouterr().out
    assert code == 2
    lines = [line for line in out.splitlines() if line.startswith("missing ")]
    assert [line.split()[1] for line in lines] == ["RFDETRSegXLarge", "SigLIP", "Depth-Anything"]
    assert "run `negt2ibench download-models`" in out


# -- the check on tiny models laid out as the real ones are ------------------------------------


def put_in_hub_cache(cache: Path, repo_id: str, model, processor) -> Path:
    """Save MODEL and PROCESSOR as the Hugging Face cache keeps a downloaded snapshot."""
    repo_dir = cache / f"models--{repo_id.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    snapshot = repo_dir / "snapshots" / commit
    model.save_pretrained(snapshot)
    processor.save_pretrained(snapshot)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture(scope="module")
def weights_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("weights")
    config = PRESETS["current"]
    for repo_id, (model, processor) in (
        (config.sam_model_id, tiny_sam()),
        (config.attribute_model_id, tiny_siglip()),
        (config.depth_model_id, tiny_depth()),
    ):
        put_in_hub_cache(root / "hub", repo_id, model, processor)
    detector = tiny_detector()
    (root / "rfdetr").mkdir()
    torch.save({"model": detector.model.model.state_dict(), "args": detector.model.args}, root / "rfdetr" / "tiny.pt")
    return root


# A weights file rfdetr has no MD5 for (a tiny one), so only loading decides.
TINY_CONFIG = PRESETS["current"].replace(detector="RFDETRSegNano", detector_weights="tiny.pt", detector_resolution=96)


@pytest.mark.slow
def test_every_model_loads_offline(weights_dir):
    results = weights.check(TINY_CONFIG, weights_dir)
    assert [(r.model.role, r.status) for r in results] == [
        ("detector", "ok"),
        ("masks", "ok"),
        ("attributes", "ok"),
        ("depth", "ok"),
    ]
    assert weights.check_exit_code(results) == 0 and weights.check_lines(results)[-1] == "every model loads offline"


@pytest.mark.slow
def test_a_truncated_weights_file_is_broken_and_a_deleted_repo_missing(weights_dir, tmp_path):
    import shutil

    broken = tmp_path / "copy"
    shutil.copytree(weights_dir, broken, symlinks=True)
    depth_repo = broken / "hub" / f"models--{TINY_CONFIG.depth_model_id.replace('/', '--')}"
    (safetensors,) = depth_repo.glob("snapshots/*/model.safetensors")
    safetensors.write_bytes(safetensors.read_bytes()[:100])
    results = {r.model.role: r for r in weights.check(TINY_CONFIG, broken)}
    assert results["depth"].status == "broken" and results["depth"].detail
    assert results["attributes"].status == "ok"
    assert weights.check_exit_code(list(results.values())) == 1

    shutil.rmtree(broken / "hub" / f"models--{TINY_CONFIG.sam_model_id.replace('/', '--')}")
    (broken / "rfdetr" / "tiny.pt").write_bytes(b"not a checkpoint")
    results = {r.model.role: r for r in weights.check(TINY_CONFIG, broken)}
    assert (results["masks"].status, results["detector"].status) == ("missing", "broken")
    assert weights.check_exit_code(list(results.values())) == 2


def test_the_published_detector_file_with_another_md5_is_broken_without_loading(tmp_path):
    (tmp_path / "rfdetr").mkdir()
    (tmp_path / "rfdetr" / "rf-detr-seg-xlarge.pt").write_bytes(b"truncated")
    (result,) = [r for r in weights.check(PRESETS["current"], tmp_path) if r.model.role == "detector"]
    assert result.status == "broken" and "MD5" in result.detail


def test_the_mask_rcnn_presets_check_torchvisions_weights(tmp_path):
    from evaluator.models.maskrcnn import maskrcnn_weights_path

    config = PRESETS["c4"]
    (model,) = [m for m in weights.preset_models(config) if m.role == "detector"]
    assert (model.kind, model.name, model.source) == ("torchvision", "Mask R-CNN", config.detector_weights)
    assert weights.SOURCES["torchvision"].check(model, config, tmp_path).status == "missing"
    path = maskrcnn_weights_path(config, tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a checkpoint")
    result = weights.SOURCES["torchvision"].check(model, config, tmp_path)
    assert result.status == "broken" and "could not be loaded" in result.detail


def test_the_geneval_presets_list_their_detector_and_clip():
    from evaluator.geneval.config import PRESETS as GENEVAL_PRESETS

    listed = {
        name: [(m.role, m.kind, m.source) for m in weights.preset_models(c)] for name, c in GENEVAL_PRESETS.items()
    }
    clip = ("colors", "hub", "openai/clip-vit-large-patch14")
    assert listed["geneval"] == [("detector", "hub", "facebook/mask2former-swin-small-coco-instance"), clip]
    assert listed["geneval_rfdetr"] == [("detector", "rfdetr", "rf-detr-seg-xlarge.pt"), clip]
    assert listed["geneval_rfdetr_sam"][1] == ("masks", "hub", "facebook/sam2.1-hiera-small")
    mask2former = weights.preset_models(GENEVAL_PRESETS["geneval"])[0]
    assert (mask2former.model_class, mask2former.processor_class) == (
        "transformers.Mask2FormerForUniversalSegmentation",  # what evaluator.geneval.perception loads
        "transformers.Mask2FormerImageProcessor",
    )


def test_download_models_check_only_for_geneval_offline_says_what_is_missing(capsys):
    assert main(["download-models", "--preset", "geneval", "--check-only"]) == 2
    out = capsys.readouterr().out
    assert "missing Mask2Former (facebook/mask2former-swin-small-coco-instance)" in out
    assert "missing CLIP ViT-L/14 (openai/clip-vit-large-patch14)" in out
