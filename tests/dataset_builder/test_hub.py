"""The Hub-ready folder: bytes, schema, `load_dataset` round trip, card, atomic writes, push."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from dataset_builder import hub
from dataset_builder.card import write_card
from dataset_builder.corpus import DEFAULT_SEED, build_corpus
from dataset_builder.hub import PROMPT_ARROW_SCHEMA, push_dataset, upload_paths, write_dataset_folder
from dataset_builder.layout import PROMPTS_PARQUET, image_splits
from dataset_builder.loading import load_prompts
from dataset_builder.records import prompt_features
from dataset_builder.validate import validate_folder
from negt2ibench.core.errors import UserError


@pytest.fixture(scope="module")
def corpus():
    return build_corpus()


@pytest.fixture(scope="module")
def built(tmp_path_factory, corpus) -> Path:
    return write_dataset_folder(corpus, tmp_path_factory.mktemp("built") / "negt2ibench")


def _front_matter(card: Path) -> dict:
    text = card.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_layout(built):
    assert sorted(_files(built)) == sorted(["README.md", "eval.yaml", PROMPTS_PARQUET, "prompts.jsonl"])
    assert not list(built.parent.glob(".*tmp*"))  # no staging folder left behind


def test_schema_matches_the_datasets_features(built):
    import pyarrow.parquet as pq

    assert PROMPT_ARROW_SCHEMA.equals(prompt_features().arrow_schema, check_metadata=True)
    schema = pq.read_schema(built / PROMPTS_PARQUET)
    assert schema.metadata[b"huggingface"] == prompt_features().arrow_schema.metadata[b"huggingface"]


@pytest.mark.slow
def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path, built, corpus):
    again = write_dataset_folder(build_corpus(DEFAULT_SEED), tmp_path / "again")
    assert _files(again) == _files(built)
    other = write_dataset_folder(build_corpus(DEFAULT_SEED + 1), tmp_path / "other")
    other_files, built_files = _files(other), _files(built)
    for name in built_files:
        if name == "eval.yaml":  # the benchmark's definition names no prompt: the same for every seed
            assert other_files[name] == built_files[name]
        else:
            assert other_files[name] != built_files[name], name


def test_files_hold_the_corpus(built, corpus):
    assert load_prompts(built / PROMPTS_PARQUET) == corpus
    assert load_prompts(built / "prompts.jsonl") == corpus
    first = json.loads((built / "prompts.jsonl").read_text(encoding="utf-8").splitlines()[0])
    assert first["prompt_id"] == "color_pos1_neg0_000" and first["statements"][0]["target"] is None


def test_load_dataset_offline_round_trip(built, corpus, tmp_path, monkeypatch):
    import os

    from datasets import load_dataset

    assert os.environ["HF_HUB_OFFLINE"] == "1"
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    prompts = load_dataset(str(built), "prompts", split="test", cache_dir=str(tmp_path / "cache"))
    assert len(prompts) == 4800
    assert prompts.features == prompt_features()
    assert prompts[123] == json.loads(corpus[123].model_dump_json())
    default = load_dataset(str(built), split="test", cache_dir=str(tmp_path / "cache2"))  # prompts is the default
    assert default["prompt_id"][:3] == [r.prompt_id for r in corpus[:3]]


def test_card_declares_configs_and_counts(built, corpus):
    meta = _front_matter(built / "README.md")
    assert meta["license"] and meta["task_categories"] == ["text-to-image"] and meta["pretty_name"]
    assert meta["configs"] == [
        {"config_name": "prompts", "default": True, "data_files": [{"split": "test", "path": "prompts/test-*.parquet"}]}
    ]
    text = (built / "README.md").read_text(encoding="utf-8")
    assert "| color | 100 | 100 | 100 | 100 | 100 | 100 | 100 | 100 | 800 |" in text
    assert "**4800**" in text
    example = next(r for r in corpus if r.prompt_id == "directional_pos1_neg1_000")  # the card's example row
    assert '"prompt_id": "directional_pos1_neg1_000"' in text and example.prompt in text
    assert "@article{elfatairy2026negt2ibench" in text
    assert "{{" not in text.replace("{{NegT2IBench}", "")  # nothing left unrendered
    assert "negt2ibench score" in text
    assert "<!-- corpus_version: 2 -->" in text and "**corpus version 2**" in text
    by_id = {r.prompt_id: r for r in corpus}
    assert f'`depth_pos0_neg1_000` ("{by_id["depth_pos0_neg1_000"].prompt}")' in text  # the shared-draw example


def _write_image_split(folder: Path, key: str, rows: int = 2) -> None:
    from datasets import Dataset, Features, Image, Value
    from PIL import Image as PILImage

    def png() -> bytes:
        buffer = io.BytesIO()
        PILImage.new("RGB", (8, 8), (200, 10, 10)).save(buffer, format="PNG")
        return buffer.getvalue()

    features = Features(
        {
            "prompt_id": Value("string"),
            "sample_index": Value("int32"),
            "seed": Value("int64"),
            "image": Image(),
            "model_id": Value("string"),
            "model_key": Value("string"),
            "params": Value("string"),
        }
    )
    data = Dataset.from_list(
        [
            {
                "prompt_id": "color_pos1_neg0_000",
                "sample_index": i,
                "seed": i,
                "image": {"bytes": png(), "path": None},
                "model_id": f"org/{key}",
                "model_key": key,
                "params": "{}",
            }
            for i in range(rows)
        ],
        features=features,
    )
    (folder / "images").mkdir(exist_ok=True)
    data.to_parquet(str(folder / "images" / f"{key}-00000-of-00001.parquet"))


def test_card_lists_image_splits_that_load(tmp_path, corpus):
    from datasets import load_dataset

    folder = write_dataset_folder(corpus, tmp_path / "ds")
    _write_image_split(folder, "sd_1_5", rows=3)
    _write_image_split(folder, "flux_2_dev", rows=2)
    (folder / "images" / "Bad-Key-00000.parquet").write_bytes(b"ignored")  # not [a-z0-9_]+
    assert list(image_splits(folder)) == ["flux_2_dev", "sd_1_5"]
    write_card(folder)
    configs = _front_matter(folder / "README.md")["configs"]
    assert configs[1] == {
        "config_name": "images",
        "data_files": [
            {"split": "flux_2_dev", "path": "images/flux_2_dev-*.parquet"},
            {"split": "sd_1_5", "path": "images/sd_1_5-*.parquet"},
        ],
    }
    text = (folder / "README.md").read_text(encoding="utf-8")
    assert "| `sd_1_5` | org/sd_1_5 | 3 | 1 |" in text
    images = load_dataset(str(folder), "images", split="sd_1_5", cache_dir=str(tmp_path / "cache"))
    assert len(images) == 3 and images[0]["image"].size == (8, 8)


@pytest.mark.slow
def test_existing_folder_needs_overwrite_and_keeps_images(tmp_path, corpus):
    folder = write_dataset_folder(corpus, tmp_path / "ds")
    with pytest.raises(UserError, match="--overwrite"):
        write_dataset_folder(corpus, folder)
    _write_image_split(folder, "sd_1_5")
    shard = (folder / "images" / "sd_1_5-00000-of-00001.parquet").read_bytes()
    other = build_corpus(5)
    write_dataset_folder(other, folder, overwrite=True)
    assert load_prompts(folder) == other
    assert (folder / "images" / "sd_1_5-00000-of-00001.parquet").read_bytes() == shard
    assert "config_name: images" in (folder / "README.md").read_text(encoding="utf-8")
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no backup or staging left


def test_foreign_folder_is_never_replaced(tmp_path, corpus):
    home = tmp_path / "home"
    home.mkdir()
    (home / "thesis.tex").write_text("precious")
    for overwrite in (False, True):  # the same answer either way: --overwrite would not help
        with pytest.raises(UserError, match="is not a NegT2IBench dataset folder") as refused:
            write_dataset_folder(corpus, home, overwrite=overwrite)
        assert "it holds thesis.tex" in str(refused.value) and "pass --overwrite" not in str(refused.value)
    assert (home / "thesis.tex").read_text() == "precious"


def test_empty_folder_and_missing_parents_are_fine(tmp_path, corpus):
    (tmp_path / "empty").mkdir()
    assert (write_dataset_folder(corpus[:10], tmp_path / "empty") / PROMPTS_PARQUET).is_file()
    assert (write_dataset_folder(corpus[:10], tmp_path / "a" / "b" / "c") / "README.md").is_file()


def test_unwritable_target(tmp_path, corpus):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="not a folder"):
        write_dataset_folder(corpus, blocker)
    with pytest.raises(UserError, match="cannot write"):
        write_dataset_folder(corpus, blocker / "inside")


def test_interrupted_build_leaves_no_half_folder(tmp_path, corpus, monkeypatch):
    def fail_midway(records, folder):
        (folder / "prompts").mkdir()
        (folder / "prompts" / "test-00000-of-00001.parquet").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(hub, "write_prompt_files", fail_midway)
    with pytest.raises(KeyboardInterrupt):
        write_dataset_folder(corpus, tmp_path / "new")
    assert list(tmp_path.iterdir()) == []


def test_interrupted_rebuild_keeps_the_old_folder(tmp_path, corpus, monkeypatch):
    folder = write_dataset_folder(corpus, tmp_path / "ds")
    _write_image_split(folder, "sd_1_5")
    before = _files(folder)
    import dataset_builder.card as card

    def fail(dataset_dir, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(card, "write_card", fail)
    with pytest.raises(RuntimeError, match="disk full"):
        write_dataset_folder(build_corpus(9), folder, overwrite=True)
    assert _files(folder) == before
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def _killed_mid_swap(folder: Path) -> None:
    """The state a rebuild killed between its two renames leaves: no folder, a committed `.new-`
    (without the images yet) and the old folder moved to `.old-`."""
    import shutil

    from negt2ibench.core.atomic import SWAP_JOURNAL

    new = folder.with_name(f".{folder.name}.new-k9")
    shutil.copytree(folder, new, ignore=shutil.ignore_patterns("images"))
    (new / SWAP_JOURNAL).write_text(json.dumps({"keep": ["images", "results"]}))
    folder.rename(folder.with_name(f".{folder.name}.old-k9"))


def test_commands_that_read_a_dataset_folder_recover_it_first(tmp_path, corpus):
    from evaluator.pipeline import resolve_source
    from generation.work import prompts_for

    folder = write_dataset_folder(corpus[:20], tmp_path / "ds")
    _write_image_split(folder, "sd_1_5")
    before = _files(folder)

    _killed_mid_swap(folder)
    assert not folder.exists()
    assert prompts_for(folder) == corpus[:20]  # generate, import-images, merge-images
    assert _files(folder) == before and [p.name for p in tmp_path.iterdir()] == ["ds"]

    _killed_mid_swap(folder)
    items, key = resolve_source(folder, split="sd_1_5")  # score
    assert key == "sd_1_5" and len(items) == 2 and _files(folder) == before


@pytest.mark.slow
def test_validate_folder_accepts_a_build_and_reports_damage(built, tmp_path, corpus):
    records, violations = validate_folder(built)
    assert len(records) == 4800 and violations == []
    damaged = write_dataset_folder(corpus, tmp_path / "damaged")
    lines = (damaged / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    (damaged / "prompts.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    (damaged / "README.md").write_text("# no configs\n", encoding="utf-8")
    _, violations = validate_folder(damaged)
    assert [str(v) for v in violations] == [
        f"{corpus[-1].prompt_id}: prompts.jsonl lacks this prompt of the parquet split",
        "README.md: no YAML `configs:` declaring the prompts config",
        "README.md: states no corpus version; this code builds version 2 (rebuild the folder)",
        "eval.yaml: README.md declares no `configs`: no task's config and split can be found",
    ]


@pytest.mark.slow
def test_validate_names_the_prompt_an_edited_jsonl_changes_and_a_broken_parquet_once(tmp_path, corpus):
    folder = write_dataset_folder(corpus, tmp_path / "ds")
    lines = (folder / "prompts.jsonl").read_text(encoding="utf-8").splitlines()
    lines[4] = lines[4].replace('"prompt":"a photo of ', '"prompt":"a picture of ', 1)
    (folder / "prompts.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    _, violations = validate_folder(folder)
    assert [str(v) for v in violations] == [
        f"{corpus[4].prompt_id}: prompts.jsonl differs from the parquet split in prompt"
    ]

    parquet = folder / PROMPTS_PARQUET
    parquet.write_bytes(parquet.read_bytes()[:5000])  # truncated
    records, violations = validate_folder(folder)
    assert len(records) == len(corpus)  # the invariants are checked on the JSONL copy
    assert violations[0].where == PROMPTS_PARQUET and len(violations) <= 3  # not 50 empty cells
    assert {v.where for v in violations[1:]} == {corpus[4].prompt_id}  # its edited text, checked on the JSONL
    assert violations[0].message.startswith("unreadable (") and "build --overwrite" in violations[0].message


# --------------------------------------------------------------------------- push


def test_push_dry_run_lists_files_without_network_or_token(built, monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    paths = push_dataset(built, "org/negt2ibench", dry_run=True)
    assert paths == ["README.md", "eval.yaml", "prompts.jsonl", PROMPTS_PARQUET]


def test_push_images_only_that_split(tmp_path, corpus):
    folder = write_dataset_folder(corpus, tmp_path / "ds")
    _write_image_split(folder, "sd_1_5")
    _write_image_split(folder, "flux_2_dev")
    assert upload_paths(folder, ["sd_1_5"]) == ["README.md", "images/sd_1_5-00000-of-00001.parquet"]
    assert "images/flux_2_dev-00000-of-00001.parquet" in upload_paths(folder)
    with pytest.raises(UserError, match="no image split nope"):
        upload_paths(folder, ["nope"])


def test_push_rejects_bad_input(built, tmp_path):
    with pytest.raises(UserError, match="ORG/NAME"):
        push_dataset(built, "no-slash", dry_run=True)
    with pytest.raises(UserError, match="negt2ibench build"):
        push_dataset(tmp_path, "org/name", dry_run=True)


class _FakeApi:
    calls: list = []
    error: Exception | None = None

    def __init__(self, token=None):
        self.token = token

    def create_repo(self, repo_id, **kwargs):
        if _FakeApi.error is not None:
            raise _FakeApi.error
        _FakeApi.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, **kwargs):
        _FakeApi.calls.append(("upload_folder", kwargs))


@pytest.fixture
def fake_hub(monkeypatch):
    import huggingface_hub

    _FakeApi.calls, _FakeApi.error = [], None
    monkeypatch.setattr(huggingface_hub, "HfApi", _FakeApi)
    return monkeypatch


def test_push_without_token_is_one_clear_line(built, fake_hub):
    import huggingface_hub

    fake_hub.setattr(huggingface_hub, "get_token", lambda: None)
    with pytest.raises(UserError) as caught:
        push_dataset(built, "org/negt2ibench")
    assert "token" in str(caught.value) and "\n" not in str(caught.value)
    assert _FakeApi.calls == []


def test_push_uploads_with_the_listed_paths(tmp_path, corpus, fake_hub):
    import huggingface_hub

    built = write_dataset_folder(corpus, tmp_path / "ds")  # push re-renders the card: not the shared folder
    fake_hub.setattr(huggingface_hub, "get_token", lambda: "hf_test")
    paths = push_dataset(built, "org/negt2ibench", private=True)
    (create, repo_id, create_args), (upload, upload_args) = _FakeApi.calls
    assert repo_id == "org/negt2ibench" and create_args["repo_type"] == "dataset" and create_args["private"]
    assert upload_args["allow_patterns"] == paths and upload_args["repo_type"] == "dataset"
    assert Path(upload_args["folder_path"]) == built


@pytest.mark.slow
def test_push_names_the_repo_in_the_card_and_rebuilds_keep_it(tmp_path, corpus, fake_hub):
    import huggingface_hub

    folder = write_dataset_folder(corpus, tmp_path / "ds")
    assert 'load_dataset("ORG/NegT2IBench"' in (folder / "README.md").read_text(encoding="utf-8")
    push_dataset(folder, "my-org/neg-bench", dry_run=True)  # a dry run changes nothing
    assert "my-org/neg-bench" not in (folder / "README.md").read_text(encoding="utf-8")
    fake_hub.setattr(huggingface_hub, "get_token", lambda: "hf_test")
    push_dataset(folder, "my-org/neg-bench")
    assert 'load_dataset("my-org/neg-bench", "prompts"' in (folder / "README.md").read_text(encoding="utf-8")
    write_card(folder)  # as generation does after adding a split
    assert 'load_dataset("my-org/neg-bench", "prompts"' in (folder / "README.md").read_text(encoding="utf-8")
    write_dataset_folder(corpus, folder, overwrite=True)
    assert 'load_dataset("my-org/neg-bench", "prompts"' in (folder / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_push_unreachable_hub_is_one_clear_line(tmp_path, corpus, fake_hub):
    import huggingface_hub

    built = write_dataset_folder(corpus, tmp_path / "ds")
    from httpx2 import ConnectError

    fake_hub.setattr(huggingface_hub, "get_token", lambda: "hf_test")
    _FakeApi.error = ConnectError("[Errno -3] Temporary failure in name resolution")
    with pytest.raises(UserError, match="cannot reach the Hugging Face Hub"):
        push_dataset(built, "org/negt2ibench")
    from huggingface_hub.errors import OfflineModeIsEnabled

    _FakeApi.error = OfflineModeIsEnabled("offline")
    with pytest.raises(UserError, match="HF_HUB_OFFLINE"):
        push_dataset(built, "org/negt2ibench")
