"""Whether an uploaded results file can go on the leaderboard (`check_results`): one model key named as an
images split, this Space's evaluator version and config hash, and every benchmark image scored exactly once.
`leaderboard.intake.submissions.submit` refuses a file that fails it, before anything is stored."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from dataset_builder.vocabulary import SAMPLES_PER_PROMPT
from evaluator.config import EVALUATOR_VERSION, PRESETS, EvaluatorConfig
from evaluator.results import ResultRecord
from leaderboard.checks.check_setup import PRESET
from leaderboard.text.submitted_names import clip
from negt2ibench.core.names import SPLIT_NAME

MAX_SPLIT = 100  # characters of a model key (the images split)


def check_results(
    results: list[ResultRecord],
    prompt_ids: Iterable[str],
    *,
    config: EvaluatorConfig = PRESETS[PRESET],
    samples_per_prompt: int = SAMPLES_PER_PROMPT,
) -> str:
    """Why these results cannot go on the leaderboard, or "" when they can: one model key, this
    evaluator's version and config hash, and every prompt id × sample exactly once."""
    if not results:
        return "the results file holds no records"
    keys = sorted({r.model_key for r in results})
    if len(keys) != 1:
        shown = ", ".join(repr(clip(key, 40)) for key in keys[:5])
        return f"the results mix {len(keys)} model keys ({shown}); submit one model per file"
    if not SPLIT_NAME.match(keys[0]) or len(keys[0]) > MAX_SPLIT:
        return (
            f"the model key {clip(keys[0], 60)!r} is not a split name: lowercase letters, digits and _ only "
            f"([a-z0-9_]+, at most {MAX_SPLIT} characters), as the images split is named"
        )
    versions = Counter(r.evaluator_version for r in results)
    if set(versions) != {EVALUATOR_VERSION}:
        found = ", ".join(f"{clip(v, 40)} ({n} records)" for v, n in versions.most_common(3))
        return f"evaluator version {found} does not match this Space's {EVALUATOR_VERSION}; re-score with it"
    hashes = Counter(r.config_hash for r in results)
    if set(hashes) != {config.config_hash}:
        found = ", ".join(clip(h, 40) for h in list(hashes)[:3])
        return (
            f"config hash {found} does not match this Space's {config.config_hash} "
            f"(preset {config.name!r}); re-score with `negt2ibench score --preset {config.name}`"
        )
    expected = {(pid, s) for pid in prompt_ids for s in range(samples_per_prompt)}
    seen = Counter((r.prompt_id, r.sample_index) for r in results)
    unknown = sorted(k for k in seen if k not in expected)
    if unknown:
        pid, s = unknown[0]
        return f"{len(unknown)} records are not benchmark images (e.g. prompt {clip(pid, 60)!r} sample {s})"
    duplicated = sorted(k for k, n in seen.items() if n > 1)
    if duplicated:
        pid, s = duplicated[0]
        return f"{len(duplicated)} images are scored more than once (e.g. {pid} sample {s})"
    missing = sorted(expected - set(seen))
    if missing:
        pid, s = missing[0]
        return (
            f"{len(missing)} of {len(expected)} images are missing (e.g. {pid} sample {s}); "
            f"a submission scores all prompts × {samples_per_prompt} samples"
        )
    return ""
