"""`dataset_builder.layout` (names, split discovery) with `negt2ibench.core.names` (split names, slugs) and
`negt2ibench.core.atomic` (the atomic writers every module uses)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from dataset_builder import layout
from dataset_builder.layout import image_file_key, image_splits, rank_path, shard_path, shard_rank_index, split_files
from negt2ibench.core import atomic, names
from negt2ibench.core.atomic import atomic_file, atomic_folder, write_atomic
from negt2ibench.core.errors import OptionError, UsageError, UserError
from negt2ibench.core.names import SlugError, check_split_name, slug


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
    assert names.SPLIT_NAME.match(slug(name))


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
    assert image_file_key("color_pos1_neg0_000.png") is None  # a prompt id without its sample index
    assert layout.lacks_sample_index("color_pos1_neg0_000.png") and not layout.lacks_sample_index("a_1.png")
    assert image_file_key("my_custom_prompt_2.png") == ("my_custom_prompt", 2)
    assert rank_path("out/r.jsonl", 3).as_posix() == "out/r.rank3.jsonl"
    assert rank_path("out/r", 0).as_posix() == "out/r.rank0.jsonl"


def test_atomic_file_is_whole_or_absent_with_usual_permissions(tmp_path):
    target = tmp_path / "sub" / "card.md"
    assert write_atomic(target, "é\n") == target and target.read_bytes() == "é\n".encode()
    expected_mode = 0o666 & ~atomic.current_umask()
    assert stat.S_IMODE(os.stat(target).st_mode) == expected_mode  # not mkstemp's private 0600
    with pytest.raises(RuntimeError, match="disk full"), atomic_file(target) as handle:
        handle.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == "é\n".encode()  # the old file, untouched
    assert sorted(p.name for p in target.parent.iterdir()) == ["card.md"]  # no temp file left


def test_a_write_that_need_not_be_durable_skips_only_the_fsync(tmp_path, monkeypatch):
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    target = tmp_path / "cache" / "thumb.png"
    write_atomic(target, b"png", durable=False)
    assert target.read_bytes() == b"png" and synced == []
    with pytest.raises(RuntimeError, match="disk full"), atomic_file(target, durable=False) as handle:
        handle.write(b"half")
        raise RuntimeError("disk full")
    assert target.read_bytes() == b"png" and sorted(p.name for p in target.parent.iterdir()) == ["thumb.png"]
    write_atomic(target, b"again")
    assert len(synced) == 1  # durable by default


def test_atomic_folder_keeps_entries_and_restores_on_failure(tmp_path):
    out = tmp_path / "ds"
    with atomic_folder(out) as staging:
        (staging / "a.txt").write_text("1")
        (staging / "images").mkdir()
        (staging / "images" / "x.parquet").write_text("img")
    assert (out / "a.txt").read_text() == "1"

    with atomic_folder(out, keep=["images"]) as staging:
        assert (out / "a.txt").read_text() == "1"  # the old folder stays in place while the block runs
        assert not (staging / "images").exists()  # kept entries move in after the block
        (staging / "a.txt").write_text("2")
    assert (out / "a.txt").read_text() == "2" and (out / "images" / "x.parquet").read_text() == "img"
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "images"]  # no journal left inside

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


def _old_folder(tmp_path):
    out = tmp_path / "ds"
    (out / "images").mkdir(parents=True)
    (out / "images" / "x.parquet").write_text("img")
    (out / "a.txt").write_text("old")
    return out


def _committed(out, token="k1", keep=("images",)):
    """What a process killed right after the commit point leaves: the filled `.new-` folder."""
    new = out.with_name(f".{out.name}.new-{token}")
    new.mkdir()
    (new / "a.txt").write_text("new")
    (new / atomic.SWAP_JOURNAL).write_text(json.dumps({"keep": list(keep)}))
    return new


@pytest.mark.parametrize("moment", ["committed", "old_moved_away", "half_carried", "carried", "renamed"])
def test_recover_folder_finishes_a_swap_killed_after_its_commit_point(tmp_path, moment):
    out = _old_folder(tmp_path)
    new = _committed(out)
    old = out.with_name(".ds.old-k1")
    if moment != "committed":
        out.rename(old)
    if moment in ("half_carried", "carried", "renamed"):
        (old / "images").rename(new / "images")
    if moment in ("carried", "renamed"):
        (new / atomic.SWAP_JOURNAL).unlink()
    if moment == "renamed":
        new.rename(out)

    assert atomic.recover_folder(out)  # says what it did
    assert (out / "a.txt").read_text() == "new" and (out / "images" / "x.parquet").read_text() == "img"
    assert sorted(p.name for p in out.iterdir()) == ["a.txt", "images"]
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]
    assert atomic.recover_folder(out) == []  # nothing left to do


def test_recover_folder_drops_an_uncommitted_rewrite_and_runs_before_every_atomic_folder(tmp_path):
    out = _old_folder(tmp_path)
    staging = out.with_name(".ds.tmp-abc123")
    staging.mkdir()
    (staging / "a.txt").write_text("half")
    with atomic_folder(out, keep=["images"]) as new_staging:
        assert not staging.exists()  # recovered first
        (new_staging / "a.txt").write_text("again")
    assert (out / "a.txt").read_text() == "again" and (out / "images" / "x.parquet").read_text() == "img"
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_recover_folder_restores_what_an_older_release_left_when_killed_mid_swap(tmp_path):
    """The older swap renamed the folder `.ds.old-PID` and moved images/ into its staging folder
    before writing the prompts, so a kill there leaves no folder at all: recovery must restore it."""
    out = _old_folder(tmp_path)
    staging = out.with_name(".ds.tmp-x7k2m9q1")
    staging.mkdir()
    out.rename(out.with_name(".ds.old-4242"))
    (out.with_name(".ds.old-4242") / "images").rename(staging / "images")
    (staging / "a.txt").write_text("half new")

    assert atomic.recover_folder(out)
    assert (out / "a.txt").read_text() == "old" and (out / "images" / "x.parquet").read_text() == "img"
    assert [p.name for p in tmp_path.iterdir()] == ["ds"]


def test_recover_folder_never_overwrites_a_folder_made_again_meanwhile(tmp_path):
    out = _old_folder(tmp_path)
    _committed(out)
    out.rename(out.with_name(".ds.old-k1"))
    out.mkdir()
    (out / "fresh.txt").write_text("made by another command")
    with pytest.raises(UserError, match="was created again"):
        atomic.recover_folder(out)
    assert (out / "fresh.txt").read_text() == "made by another command"
    assert (out.with_name(".ds.old-k1") / "images" / "x.parquet").read_text() == "img"


def test_atomic_file_removes_temp_files_of_dead_writers_only(tmp_path):
    target = tmp_path / "results.jsonl"
    host = atomic._host()
    dead = tmp_path / f".results.jsonl.999999999@{host}.abc.tmp"  # no such process
    alive = tmp_path / f".results.jsonl.{os.getppid()}@{host}.def.tmp"
    elsewhere = tmp_path / ".results.jsonl.999999999@0000ffff.ghi.tmp"  # another machine's writer
    for path in (dead, alive, elsewhere):
        path.write_text("partial")
    write_atomic(target, "x\n")
    assert not dead.exists() and alive.exists() and elsewhere.exists()


def test_atomic_folder_in_an_unwritable_place_is_a_user_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(UserError, match="cannot write to"), atomic_folder(blocker / "ds"):
        pass


def test_atomic_folder_never_replaces_the_current_folder(tmp_path, monkeypatch):
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    with pytest.raises(UserError, match="it holds the current folder"), atomic_folder(tmp_path):
        pass
    assert (tmp_path / "here").is_dir()


def test_the_folder_lock_is_reentrant_in_a_thread_and_excludes_other_processes(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "ds"
    with atomic_folder(out) as staging:
        (staging / "a.txt").write_text("1")
        assert atomic.recover_folder(tmp_path / "other") == []  # same parent, same thread: no deadlock
        probe = (
            "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDONLY)\n"
            "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
            "except BlockingIOError:\n    print('locked')\n"
        )
        seen = subprocess.run([sys.executable, "-c", probe, str(tmp_path)], capture_output=True, text=True).stdout
        assert seen.strip() == "locked"  # another process cannot swap folders here meanwhile
    assert (out / "a.txt").read_text() == "1"
