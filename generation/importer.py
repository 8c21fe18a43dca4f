"""Bring images made elsewhere (`{prompt_id}_{sample_index}.png`) into a split, validated."""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dataset_builder.layout import image_file_key, image_file_name, lacks_sample_index
from dataset_builder.records import PromptRecord
from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from negt2ibench.core.errors import UserError
from negt2ibench.core.versions import library_versions

from .registry import validate_key
from .shards import ImageKey, ImageRecord, ShardWriter, existing_keys

IMPORT_RANK = 999  # shard rank number reserved for imports, so they never collide with generation ranks


@dataclass
class ImportReport:
    key: str
    imported: int = 0
    already_present: int = 0
    problems: list[str] = field(default_factory=list)  # files that cannot be imported, with the reason
    ignored: list[str] = field(default_factory=list)  # files that are not PNG images at all
    missing: list[ImageKey] = field(default_factory=list)  # expected but absent after the import
    prompts: int = 0  # the prompts the gaps are counted against
    samples: int = 0  # images expected per prompt

    def summary_lines(self, show: int = 20) -> list[str]:
        lines = [f"split {self.key}: imported {self.imported}, already present {self.already_present}"]
        if self.ignored:
            lines.append(
                f"ignored {len(self.ignored)} files that are not .png: {', '.join(self.ignored[:5])}"
                + (" ..." if len(self.ignored) > 5 else "")
            )
        if self.problems:
            lines.append(f"{len(self.problems)} files not imported:")
            lines.extend(f"  {problem}" for problem in self.problems[:show])
            if len(self.problems) > show:
                lines.append(f"  ... and {len(self.problems) - show} more")
        if self.missing:
            expected = self.prompts * self.samples
            lines.append(
                f"gaps: {len(self.missing):,} of {expected:,} expected images are missing ({self.prompts:,} prompts × "
                f"{self.samples} images each), e.g. " + ", ".join(image_file_name(p, i) for p, i in self.missing[:5])
            )
        return lines


@dataclass(frozen=True)
class _Candidate:
    path: Path
    prompt_id: str
    sample_index: int
    png: bytes


def _validate(path: Path, prompt_ids: set[str]) -> tuple[_Candidate | None, str | None]:
    """A file → a candidate, or the reason it cannot be imported."""
    from PIL import Image, UnidentifiedImageError

    if lacks_sample_index(path.name):
        stem = path.name.rsplit(".", 1)[0]
        return None, f"{path.name}: no sample index; name it {stem}_0.png ({stem}_1.png, ... for its other images)"
    key = image_file_key(path.name, png_only=True)
    if not key:
        return None, f"{path.name}: name is not {{prompt_id}}_{{sample_index}}.png"
    prompt_id, sample_index = key
    if prompt_id not in prompt_ids:
        return None, f"{path.name}: unknown prompt id {prompt_id!r}"
    data = path.read_bytes()
    try:
        with Image.open(io.BytesIO(data)) as image:
            image_format = image.format
            image.load()  # decodes every pixel: truncated files fail here
    except UnidentifiedImageError:  # its message is the repr of our in-memory buffer: say it plainly
        return None, f"{path.name}: not an image (no image format recognised in its {len(data)} bytes)"
    except (OSError, SyntaxError, ValueError) as error:
        return None, f"{path.name}: not a decodable image ({type(error).__name__}: {error})"
    if image_format != "PNG":
        return None, f"{path.name}: is {image_format}, not PNG (convert losslessly, or keep the original PNG)"
    return _Candidate(path, prompt_id, sample_index, data), None


def _candidates(
    folder: Path, prompt_ids: set[str], report: ImportReport
) -> tuple[list[_Candidate], dict[ImageKey, Path]]:
    """FOLDER's importable files and where each image came from; the others go to REPORT."""
    candidates: list[_Candidate] = []
    seen: dict[ImageKey, Path] = {}
    for path in sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")):
        if path.suffix.lower() != ".png":
            report.ignored.append(path.name)
            continue
        candidate, problem = _validate(path, prompt_ids)
        if candidate is None:
            report.problems.append(problem or f"{path.name}: cannot be imported")
            continue
        image_key = (candidate.prompt_id, candidate.sample_index)
        if image_key in seen:
            report.problems.append(f"{path.name}: same image as {seen[image_key].name}")
            continue
        seen[image_key] = path
        candidates.append(candidate)
    return candidates, seen


def _refuse_problems(report: ImportReport, candidates: list[_Candidate], folder: Path, skip_bad: bool) -> None:
    """Raise `UserError` when there is nothing to import, or bad files and no `skip_bad`."""
    listed = "; ".join(report.problems[:10]) + (
        f"; ... {len(report.problems) - 10} more" if len(report.problems) > 10 else ""
    )
    if report.problems and not candidates:  # --skip-bad or not, there is nothing to import
        raise UserError(f"nothing imported: none of the {len(report.problems)} PNG files can be imported: {listed}")
    if report.problems and not skip_bad:
        raise UserError(f"nothing imported: {listed} (fix the files, or pass --skip-bad to import the valid ones)")
    if not candidates:
        found = f" (only {len(report.ignored)} other files, e.g. {report.ignored[0]})" if report.ignored else ""
        raise UserError(f"no {{prompt_id}}_{{sample_index}}.png files in {folder}{found}")


def _write_candidates(
    candidates: list[_Candidate],
    done: set[ImageKey],
    report: ImportReport,
    dataset_dir: Path,
    folder: Path,
    model_id: str | None,
    shard_size: int,
) -> None:
    """Write the candidates not DONE as shards of split `report.key`, counting them in REPORT."""
    key = report.key
    params = json.dumps(
        {"source": "import-images", "folder": folder.name, "seed": "unknown (-1)", "versions": library_versions()},
        sort_keys=True,
    )
    writer = ShardWriter(dataset_dir, key, rank=IMPORT_RANK, shard_size=shard_size)
    try:
        for candidate in candidates:
            if (candidate.prompt_id, candidate.sample_index) in done:
                report.already_present += 1
                continue
            writer.add(
                ImageRecord(
                    prompt_id=candidate.prompt_id,
                    sample_index=candidate.sample_index,
                    seed=-1,
                    png=candidate.png,
                    model_id=model_id or key,
                    model_key=key,
                    params=params,
                )
            )
            report.imported += 1
    finally:
        writer.flush()


def import_images(
    key: str,
    folder: Path,
    dataset_dir: Path,
    prompts: Sequence[PromptRecord],
    model_id: str | None = None,
    num_images: int | None = None,
    skip_bad: bool = False,
    shard_size: int = 128,
) -> ImportReport:
    """Validate every file of FOLDER, then write the good ones as shards of split KEY.

    With any bad file (unknown id, undecodable, not PNG, bad name) nothing is written unless
    `skip_bad`. Images already in the split are skipped (an import can be resumed). Gaps are
    reported against prompts × num_images images (num_images: the benchmark's 4 per prompt, or the
    largest sample index seen + 1 when larger).
    """
    validate_key(key)
    folder = Path(folder)
    if not folder.is_dir():
        raise UserError(f"{folder} is not a folder")
    report = ImportReport(key=key)
    candidates, seen = _candidates(folder, {p.prompt_id for p in prompts}, report)
    _refuse_problems(report, candidates, folder, skip_bad)
    done = existing_keys(dataset_dir, key)
    _write_candidates(candidates, done, report, dataset_dir, folder, model_id, shard_size)

    seen_samples = max((c.sample_index for c in candidates), default=-1) + 1
    samples = num_images if num_images is not None else max(SAMPLES_PER_PROMPT, seen_samples)
    present = done | set(seen)
    report.missing = [(p.prompt_id, i) for p in prompts for i in range(samples) if (p.prompt_id, i) not in present]
    report.prompts, report.samples = len(prompts), samples
    return report
