"""`dataset_builder.layout`: names, split discovery, slugs and the atomic writers every module uses."""

from __future__ import annotations

import os
import stat

import pytest

from dataset_builder import layout
from dataset_builder.layout import (
    SlugError,
    atomic_file,
    atomic_folder,
    check_split_name,
    image_file_key,
    image_splits,
    rank_path,
    shard_path,
    shard_rank_index,
    slug,
    split_files,
    write_atomic,
)
from negt2ibench.errors import OptionError, UsageError, UserError


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (" SD 1.5 + NegationCLIP ", "sd_1_5_negationclip"),
        ("my__model", "my_model"),  # runs of `_` collapse too: one slug rule for the Space and `score`
        ("_Flux.2-klein_", "flux_2_klein"),
        ("sd_1_5", "sd_1_5"),
    ],
)
def test_slug(name, expected):
    assert slug(name) == expected
    assert layout.SPLIT_NAME.match(slug(name))


def test_slug_of_a_name_without_letters():
    assert slug("+++", fallback="images") == "images"
    with pytest.raises(SlugError, match="has no letters or digits") as caught:
        slug("+++")
    assert isinstance(caught.value, ValueError) and isinstance(caught.value, UsageError)


def test_split_names():
    assert check_split_name("sd_1_5") == "sd_1_5"
    with pytest.raises(OptionError, match="model key 'SD-1' is not a valid split name"):
        check_split_name("SD-1")
    with pytest.raises(OptionError, match="^'a b' is not a valid split name"):
        check_split_name("a b", what="")


def test_shard_names_and_split_discovery(tmp_path):
    path = shard_path(tmp_path, "sd_1_5", 2, 7)
    assert path == tmp_path / "images" / "sd_1_5-r002-00007.parquet"
    assert shard_rank_index(path) == ("sd_1_5", 2, 7)
    assert shard_rank_index(tmp_path / "sd_1_5-00000-of-00001.parquet") is None

    images = tmp_path / "images"
    images.mkdir()
    for name in (
        "sd_1_5-r000-00000.parquet",
        "sd_1_5-00000-of-00001.parquet",  # a Hub download's name: still the split's (the card's glob says so)
        "sd-r000-00000.parquet",
        ".sd_1_5-r000-00001.parquet.123.tmp",  # a writer's temp file
        "Bad-r000-00000.parquet",  # not a split name
        "notes.parquet",
    ):
        (images / name).write_bytes(b"x")
    assert {key: [p.name for p in paths] for key, paths in image_splits(tmp_path).items()} == {
        "sd": ["sd-r000-00000.parquet"],
        "sd_1_5": ["sd_1_5-00000-of-00001.parquet", "sd_1_5-r000-00000.parquet"],
    }
    assert split_files(tmp_path, "flux") == [] and image_splits(tmp_path / "none") == {}


def test_loose_image_names_and_rank_files():
    assert image_file_key("color_pos1_neg0_000_3.PNG") == ("color_pos1_neg0_000", 3)
    assert image_file_key("color_pos1_neg0_000_3.jpg") == ("color_pos1_neg0_000", 3)
    assert image_file_key("color_pos1_neg0_000_3.jpg", png_only=True) is None
    assert image_file_key("notes.png") is None
    assert rank_path("out/r.jsonl", 3).as_posix() == "out/r.rank3.jsonl"
    assert rank_path("out/r", 0).as_posix() == "out/r.rank0.jsonl"


def test_atomic_file_is_whole_or_absent_with_usual_permissions(tmp_path):
    target = tmp_path / "sub" / "card.md"
    assert write_atomic(target, "é\n") == target and target.read_bytes() == "é\n".encode()
    expected_mode = 0o666 & ~layout.current_umask()
    assert stat.S_IMODE(os.stat(target).st_mode) == expected_mode  # not mkstemp's private 0600
    with pytest.raises(RuntimeError, match="disk full"), atomic_file(target) as handle:
        handle.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == "é\n".encode()  # the old file, untouched
    assert sorted(p.name for p in target.parent.iterdir()) == ["card.md"]  # no temp file left


def test_atomic_folder_keeps_entries_and_restores_on_failure(tmp_path):
    out = tmp_path / "ds"
    with atomic_folder(out) as staging:
        (staging / "a.txt").write_text("1")
        (staging / "images").mkdir()
        (staging / "images" / "x.parquet").write_text("img")
    assert (out / "a.txt").read_text() == "1"

    with atomic_folder(out, keep=["images"]) as staging:
        assert (staging / "images" / "x.parquet").read_text() == "img"  # moved in before the block
        (staging / "a.txt").write_text("2")
    assert (out / "a.txt").read_text() == "2" and (out / "images" / "x.parquet").read_text() == "img"

    with pytest.raises(KeyboardInterrupt), atomic_folder(out, keep=["images"]) as staging:
        (staging / "a.txt").write_text("3")
        raise KeyboardInterrupt
    assert (out / "a.txt").read_text() == "2" and (out / "images" / "x.parquet").read_text() == "img"
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]  # no staging or backup left

    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(RuntimeError), atomic_folder(empty):
        raise RuntimeError("stop")
    assert empty.is_dir() and not any(empty.iterdir())  # an empty folder stays an empty folder


def test_atomic_folder_in_an_unwritable_place_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="cannot write to"), atomic_folder(blocker / "ds"):
        pass
