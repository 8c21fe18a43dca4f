"""Time `negt2ibench agree` on the paper's study size (run by hand).

    .venv/bin/python benchmarks/agree_speed.py [--images 600] [--evaluators 10] [--bootstrap 1000] [--repeat 3]

Builds a synthetic study with a fixed seed: `--images` images drawn by `annotation-sample`'s
stratified sampler from the built-in corpus, three annotators per image answering each question
right with probability 0.9, and `--evaluators` judges whose element decisions are right with
probability 0.85 and whose continuous score is the mean of per-element probabilities (all
distinct, the costly case for the rank statistics). Reports the median wall and CPU time of the
whole command (reading the files, every statistic with `--bootstrap` resamples, writing JSON,
Markdown and CSVs; the first run also imports scipy.stats / statsmodels) and the wall time of
`compute_agreement` alone.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dataset_builder.corpus import build_corpus  # noqa: E402
from evaluator.results import ObjectResult, ResultRecord, StatementResult  # noqa: E402
from negt2ibench.cli import main  # noqa: E402
from validation.agreement import compute_agreement  # noqa: E402
from validation.annotations import AnnotationRecord, read_annotations, write_annotations  # noqa: E402
from validation.labels import build_labels  # noqa: E402
from validation.runs import check_results  # noqa: E402
from validation.sample import SampleItem, stratified_sample  # noqa: E402


def synthetic_study(images: int, evaluators: int, seed: int = 0):
    rng = random.Random(seed)
    prompts = {p.prompt_id: p for p in build_corpus()}
    candidates = [
        SampleItem(prompt_id=p.prompt_id, model_key=m, sample_index=0, category=p.category, setting=p.setting)
        for p in prompts.values()
        for m in ("model_a", "model_b", "model_c")
    ]
    sample = stratified_sample(candidates, per_category=images // 6, seed=seed)
    annotations = []
    for item in sample:
        prompt = prompts[item.prompt_id]
        truth = [rng.random() < 0.5 for _ in prompt.statements]  # the image's true answers
        for name in ("ann", "bob", "cat"):
            answers = [t if rng.random() < 0.9 else not t for t in truth]
            annotations.append(
                AnnotationRecord(
                    prompt_id=item.prompt_id,
                    model_key=item.model_key,
                    sample_index=0,
                    annotator=name,
                    objects={o: rng.random() < 0.95 for o in prompt.objects},
                    statements={str(s.index): answers[k] for k, s in enumerate(prompt.statements)},
                )
            )
    runs = []
    for judge in range(evaluators):
        records = []
        for item in sample:
            prompt = prompts[item.prompt_id]
            probabilities = [rng.random() for _ in range(len(prompt.objects) + len(prompt.statements))]
            objects = [
                ObjectResult(name=o, present=p > 0.15, confidence=p)
                for o, p in zip(prompt.objects, probabilities, strict=False)
            ]
            statements = [
                StatementResult(index=s.index, polarity=s.polarity, satisfied=p > 0.5)
                for s, p in zip(prompt.statements, probabilities[len(prompt.objects) :], strict=True)
            ]
            records.append(
                ResultRecord(
                    prompt_id=item.prompt_id,
                    model_key=item.model_key,
                    sample_index=0,
                    passed=all(o.present for o in objects) and all(s.satisfied for s in statements),
                    objects=objects,
                    statements=statements,
                    evaluator_version="1.0.0",
                    config_hash=f"j{judge}",
                    evaluator=f"judge_{judge}/pos",
                    score=sum(probabilities) / len(probabilities),
                )
            )
        runs.append(records)
    return prompts, annotations, runs


def main_benchmark() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=600)
    parser.add_argument("--evaluators", type=int, default=10)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    prompts, annotations, runs = synthetic_study(args.images, args.evaluators)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        write_annotations(annotations, root / "annotations.jsonl")
        paths = []
        for i, records in enumerate(runs):
            path = root / f"judge_{i}.jsonl"
            path.write_text("".join(r.model_dump_json() + "\n" for r in records))
            paths.append(str(path))
        command = ["agree", "--annotations", str(root / "annotations.jsonl"), "--results", *paths]
        command += ["--out", str(root / "out"), "--bootstrap", str(args.bootstrap)]
        whole, cpu = [], []
        for _ in range(args.repeat):
            start, start_cpu = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):
                assert main(command) == 0
            whole.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        labels = build_labels(read_annotations(root / "annotations.jsonl"), prompts)
        checked = [check_results(r, prompts, name=f"j{i}", source=f"j{i}") for i, r in enumerate(runs)]
        core = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            compute_agreement(labels, checked, resamples=args.bootstrap, seed=0)
            core.append(time.perf_counter() - start)
    print(
        f"{len(labels.labels)} images × {args.evaluators} evaluators, {args.bootstrap} resamples: "
        f"`negt2ibench agree` {statistics.median(whole):.2f} s (median of {args.repeat}: "
        f"{', '.join(f'{t:.2f}' for t in whole)}; CPU {statistics.median(cpu):.2f} s); "
        f"compute_agreement {statistics.median(core):.2f} s"
    )


if __name__ == "__main__":
    main_benchmark()
