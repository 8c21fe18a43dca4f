"""Images + prompts → a judge's result records in one or all three modes, resumable, across processes.

`judge_images` loads the judge (timed apart), then, a group of images at a time, asks every
question the requested modes need — each distinct question once per image, so ``all`` asks
objects and positive statements once for ``pos`` and ``neg`` together — and writes one record
per image and mode. Keys already in an output are skipped, so rerunning resumes; under
`accelerate launch` / torchrun each process writes ``OUT.rank{i}.jsonl`` and the main process
merges them, as `negt2ibench score` does. The summary carries the paper's Table 8 costs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from PIL import Image
from tqdm.auto import tqdm

from dataset_builder.layout import rank_path
from dataset_builder.records import PromptIndex, PromptLookupError, PromptRecord
from evaluator.images import ImageError, load_image
from evaluator.resultio import ResultWriter, merge_results, read_results
from evaluator.results import ResultRecord
from negt2ibench.core.errors import MissingWeightsError, UserError
from negt2ibench.core.launch import Launch
from negt2ibench.core.options import check, non_negative_int

from .adapters import JudgeAdapter
from .questions import MODES, Question, questions_for, wording_examples
from .registry import JUDGES_VERSION
from .sources import JudgeItem
from .summary import JudgeSummary, ModeCounts
from .verdict import RecordContext, judge_error_record, judge_record

MODE_CHOICES: tuple[str, ...] = (*MODES, "all")


def modes_of(mode: str) -> tuple[str, ...]:
    """`all` → the three modes; a single mode → itself."""
    if mode == "all":
        return MODES
    if mode not in MODES:
        raise UserError(f"unknown --mode {mode!r}; choose one of {', '.join(MODE_CHOICES)}")
    return (mode,)


def mode_out_path(out: str | Path, mode: str, *, several: bool) -> Path:
    """`judge.jsonl` for one mode; `judge.whole.jsonl`, `judge.pos.jsonl`, `judge.neg.jsonl` for `all`."""
    out = Path(out)
    return out.with_name(f"{out.stem}.{mode}{out.suffix or '.jsonl'}") if several else out


def record_context(adapter: JudgeAdapter, mode: str) -> RecordContext:
    spec = adapter.spec
    return RecordContext(
        evaluator=f"{spec.key}/{mode}",
        evaluator_version=JUDGES_VERSION,
        config_hash=spec.config_hash(mode=mode, dtype=adapter.dtype_name, templates=wording_examples()),
    )


def _done_keys(path: Path) -> frozenset:
    """Keys already merged into PATH (read without the writer lock: every rank reads it at once)."""
    return frozenset(record.key for record in read_results(path, strict=False)) if path.exists() else frozenset()


def _error_kind(message: str) -> str:
    return next(
        (kind for kind in ("unknown prompt id", "bad image", "judge failed") if message.startswith(kind)), "other"
    )


@dataclass
class _Ready:
    item: JudgeItem
    prompt: PromptRecord
    image: Image.Image
    questions: dict[str, list[Question]]  # mode → its questions


def _answers(adapter: JudgeAdapter, ready: Sequence[_Ready]) -> list[dict[str, float] | Exception]:
    """P("yes") per distinct question text of each image; an image whose forward fails gets its exception."""

    def ask(group: Sequence[_Ready]) -> list[dict[str, float]]:
        texts = [list(dict.fromkeys(q.text for qs in entry.questions.values() for q in qs)) for entry in group]
        images = [entry.image for entry, asked in zip(group, texts, strict=True) for _ in asked]
        flat = adapter.yes_probability(images, [text for asked in texts for text in asked])
        out, start = [], 0
        for asked in texts:
            out.append(dict(zip(asked, flat[start : start + len(asked)], strict=True)))
            start += len(asked)
        return out

    try:
        return list(ask(ready))
    except (MissingWeightsError, KeyboardInterrupt):
        raise
    except Exception:  # noqa: BLE001 - isolate the image that breaks a batch, keep the rest
        results: list[dict[str, float] | Exception] = []
        for entry in ready:
            try:
                results.append(ask([entry])[0])
            except (MissingWeightsError, KeyboardInterrupt):
                raise
            except Exception as error:  # noqa: BLE001
                results.append(error)
        return results


def judge_one(
    adapter: JudgeAdapter,
    image: Image.Image,
    prompt: PromptRecord,
    mode: str,
    *,
    model_key: str = "upload",
    sample_index: int = 0,
) -> ResultRecord:
    """One image's record in one mode, with the questions and rules of a run (the Space's
    "Score an image" panel). Each distinct question is asked once."""
    if mode not in MODES:
        raise UserError(f"unknown judge mode {mode!r}; choose one of {', '.join(MODES)}")
    questions = questions_for(prompt, mode)
    texts = list(dict.fromkeys(q.text for q in questions))
    answers = dict(zip(texts, adapter.yes_probability([image] * len(texts), texts), strict=True))
    return judge_record(
        prompt,
        questions,
        [answers[q.text] for q in questions],
        context=record_context(adapter, mode),
        model_key=model_key,
        sample_index=sample_index,
    )


def _error_rows(
    item: JudgeItem, modes: Sequence[str], message: str, contexts: dict[str, RecordContext]
) -> list[tuple[str, ResultRecord]]:
    image = item.image
    return [
        (mode, judge_error_record(image.prompt_id, item.model_key, image.sample_index, message, context=contexts[mode]))
        for mode in modes
    ]


def _judge_group(
    group: Sequence[JudgeItem],
    needed: Sequence[tuple[str, ...]],
    prompts: PromptIndex,
    adapter: JudgeAdapter,
    contexts: dict[str, RecordContext],
    summary: JudgeSummary,
) -> list[tuple[str, ResultRecord]]:
    """(mode, record) for every image of `group` and each mode it still needs."""
    records: list[tuple[str, ResultRecord]] = []
    ready: list[_Ready] = []
    for item, modes in zip(group, needed, strict=True):
        image = item.image
        try:
            prompt = prompts[image.prompt_id]
            picture = load_image(image.fetch())
        except PromptLookupError as error:
            message = str(error)
        except (ImageError, OSError) as error:
            message = f"bad image: {error}"
        else:
            ready.append(_Ready(item, prompt, picture, {mode: questions_for(prompt, mode) for mode in modes}))
            continue
        records += _error_rows(item, modes, message, contexts)
    for entry, answers in zip(ready, _answers(adapter, ready), strict=True):
        image = entry.item.image
        if isinstance(answers, Exception):
            message = f"judge failed: {type(answers).__name__}: {answers}"
            records += _error_rows(entry.item, list(entry.questions), message, contexts)
            continue
        summary.images += 1
        summary.questions += len(answers)
        for mode, questions in entry.questions.items():
            record = judge_record(
                entry.prompt,
                questions,
                [answers[q.text] for q in questions],
                context=contexts[mode],
                model_key=entry.item.model_key,
                sample_index=image.sample_index,
            )
            records.append((mode, record))
    return records


def _judge_into(
    paths: dict[str, Path],
    items: Sequence[JudgeItem],
    prompts: PromptIndex,
    adapter: JudgeAdapter,
    *,
    summary: JudgeSummary,
    skip: dict[str, frozenset] | None = None,
    progress: bool = True,
    position: int = 0,
) -> None:
    contexts = {mode: record_context(adapter, mode) for mode in paths}
    with ExitStack() as stack:
        writers = {mode: stack.enter_context(ResultWriter(path)) for mode, path in paths.items()}
        done = {mode: set(writer.done) | set((skip or {}).get(mode, ())) for mode, writer in writers.items()}
        pending: list[tuple[JudgeItem, tuple[str, ...]]] = []
        for item in items:
            modes = tuple(mode for mode in paths if item.key not in done[mode])
            for mode in paths:
                summary.modes[mode].already_done += mode not in modes
            if modes:
                pending.append((item, modes))
        bar = tqdm(
            total=len(items),
            initial=len(items) - len(pending),
            unit="img",
            desc=f"judge {adapter.spec.key}",
            disable=not progress,
            position=position,
            dynamic_ncols=True,
        )
        group_size = max(1, adapter.batch_size)
        with bar:
            for start in range(0, len(pending), group_size):
                chunk = pending[start : start + group_size]
                group = [item for item, _ in chunk]
                for mode, record in _judge_group(group, [m for _, m in chunk], prompts, adapter, contexts, summary):
                    if not writers[mode].write(record):
                        continue
                    counts = summary.modes[mode]
                    if record.error:
                        counts.errors += 1
                        reason = _error_kind(record.error)
                        summary.error_reasons[reason] = summary.error_reasons.get(reason, 0) + 1
                    else:
                        counts.judged += 1
                        counts.passed += int(record.passed)
                        counts.questions += len(record.questions)
                bar.update(len(chunk))


def judge_images(
    items: Sequence[JudgeItem],
    prompts: PromptIndex | Sequence[PromptRecord],
    adapter: JudgeAdapter,
    *,
    out_path: str | Path,
    mode: str = "pos",
    limit: int | None = None,
    progress: bool = True,
) -> JudgeSummary:
    """Judge every image of `items` in `mode` (``all``: the three, one file each) into `out_path`.

    Loads the adapter first (timed apart; a missing weight raises `MissingWeightsError` before
    any image is read), then writes one record per image and mode, skipping keys already there.
    """
    if limit is not None:
        limit = check("limit", limit, non_negative_int)
    modes = modes_of(mode)
    items = list(items)[:limit] if limit is not None else list(items)
    index = prompts if isinstance(prompts, PromptIndex) else PromptIndex(prompts)
    paths = {m: mode_out_path(out_path, m, several=len(modes) > 1) for m in modes}
    for path in paths.values():
        path.parent.mkdir(parents=True, exist_ok=True)
    summary = JudgeSummary(
        judge=adapter.spec.key,
        hub_id=adapter.spec.hub_id,
        device=str(adapter.device),
        dtype=adapter.dtype_name,
        modes={m: ModeCounts(path) for m, path in paths.items()},
        total=len(items),
    )
    adapter.reset_peak_memory()
    started = time.perf_counter()
    adapter.load()
    summary.load_seconds = time.perf_counter() - started

    started = time.perf_counter()
    launch = Launch.detect()
    if launch.world_size <= 1:
        _judge_into(paths, items, index, adapter, summary=summary, progress=progress)
    else:
        summary.rank, summary.world = launch.rank, launch.world_size
        merged_done = {m: _done_keys(path) for m, path in paths.items()}  # merged earlier: skipped on every rank
        own = {m: rank_path(path, launch.rank) for m, path in paths.items()}
        for m, path in own.items():
            summary.modes[m].path = path
        _judge_into(
            own,
            launch.share(items),
            index,
            adapter,
            summary=summary,
            skip=merged_done,
            progress=progress and launch.is_local_main,
            position=launch.rank,
        )

        def merge() -> None:
            for path in paths.values():
                inputs = ([path] if path.exists() else []) + [rank_path(path, r) for r in range(launch.world_size)]
                merge_results([p for p in inputs if p.exists()], path)

        launch.on_main(merge)
    summary.seconds = time.perf_counter() - started
    summary.peak_memory_bytes, summary.memory_kind = adapter.peak_memory()
    return summary
