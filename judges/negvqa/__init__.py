"""NegVQA (Zhang et al., ACL 2025 Findings; seed 002) on this project's VLM judges: how far a judge reads
negation before it is trusted with negated statements (docs/negvqa.md).

- `files`: the rows of a JSONL, TSV or parquet file, their images read on demand;
- `data`: the questions of a source (a file, a folder, a Hub dataset), the column mapping, the
  malformed rows by row number, NegVQA's domains;
- `records`: the prompt, one record per question and form (negated / original), their files;
- `runner`: the run on `evaluator.engine.run_records` (resume, ranks, error rows, progress);
- `summary`: accuracy overall, by domain and by source dataset with bootstrap intervals, the drop
  from the originals, the letter bias, several judges in one table (pure: records in);
- `plot`: accuracy by domain as a PNG.
"""
