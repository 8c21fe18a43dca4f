"""Messages a newcomer meets (smaller ones): each says what is true, in whole sentences."""

from __future__ import annotations

import logging
import shutil
import warnings

from negt2ibench.cli import _quiet_library_noise, main
from negt2ibench.core.errors import brief


def test_brief_keeps_a_library_sentence_whole_or_says_it_was_cut():
    said = OSError("We couldn't connect to 'https://huggingface.co' to load the files. Check your connection.")
    assert brief(said) == "We couldn't connect to 'https://huggingface.co' to load the files"
    long = ValueError("make sure you don't have a local directory with the same name " * 5)
    cut = brief(long, limit=60)
    assert cut.endswith(" …") and len(cut) <= 62 and not cut[:-2].endswith(" ")  # at a word, and said so
    assert brief(KeyError()) == "KeyError"


def test_library_chatter_is_kept_off_stderr_unless_verbose(capsys):
    with warnings.catch_warnings():
        _quiet_library_noise("score")
        with warnings.catch_warnings(record=True) as caught:
            warnings.warn("torch.jit.script is deprecated", FutureWarning, stacklevel=1)
    assert not caught  # a library's deprecation notice: ignored
    logging.getLogger("rf-detr").warning("Downloading pretrained weights")
    logging.getLogger("huggingface_hub").warning("Retrying in 8s")
    assert "Downloading" not in capsys.readouterr().err
    logging.getLogger("rf-detr").error("a real error")  # errors still come through
    for name in ("rf-detr", "huggingface_hub"):
        logging.getLogger(name).filters.clear()  # leave the loggers as they were for other tests
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_verbose_is_accepted_before_and_after_a_command(tmp_path, capsys):
    assert main(["-v", "leaderboard", "list", "--home", str(tmp_path)]) == 0
    assert main(["leaderboard", "list", "--home", str(tmp_path), "--verbose"]) == 0
    assert "0 submission(s)" in capsys.readouterr().out


def test_leaderboard_verify_on_an_empty_store_says_it_is_empty(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NEGT2I_HOME", str(tmp_path))
    assert main(["leaderboard", "verify"]) == 0
    out = capsys.readouterr().out
    assert "holds no submissions yet" in out and "verified or rejected" not in out


def test_annotation_sample_names_every_short_category_even_one_without_images(tmp_path, capsys):
    assert main(["examples", "--out", str(tmp_path / "ex")]) == 0
    colours = tmp_path / "colours"
    colours.mkdir()
    for picture in (tmp_path / "ex" / "pictures").glob("color_*.png"):
        shutil.copy(picture, colours / picture.name)
    assert main(["import-images", "--key", "colours", "--dir", str(colours), "--out", str(tmp_path / "ds")]) == 0
    out = tmp_path / "s.jsonl"
    assert main(["annotation-sample", "--images", str(tmp_path / "ds"), "--per-category", "2", "--out", str(out)]) == 0
    note = capsys.readouterr().out.splitlines()[-1]
    assert note.startswith("note: too few images for comparative (short by 2), depth (short by 2)")
    assert "color" not in note and "proximity (short by 2)" in note
