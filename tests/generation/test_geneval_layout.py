"""GenEval's layout on disk as the generator resumes it (`generation.geneval_layout`); fast, beside the
generating tests of test_geneval.py (slow)."""

from __future__ import annotations

from generation.geneval_layout import existing_samples


def test_only_sample_files_count_as_existing_samples(tmp_path):
    # GenEval's layout: {N:05d}/samples/{i:04d}.png; a note, a folder named like a sample, and a
    # folder that is not a prompt's are not samples already made
    samples = tmp_path / "00007" / "samples"
    samples.mkdir(parents=True)
    (samples / "0002.png").write_bytes(b"png")
    (samples / "notes.txt").write_text("not a sample")
    (samples / "0003.png").mkdir()
    (tmp_path / "extra" / "samples").mkdir(parents=True)
    (tmp_path / "extra" / "samples" / "0000.png").write_bytes(b"png")
    assert existing_samples(tmp_path) == {("geneval_00007", 2)}
