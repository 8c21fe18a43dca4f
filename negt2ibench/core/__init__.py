"""The foundation every other package of the project stands on; it imports nothing else of the project.

- `errors`: the error classes and their exit codes;
- `options`: option validators shared by argparse and the Python API;
- `names`: split names (model keys) and slugs;
- `jsonl`: the one JSONL reader; `strict_json`: JSON-ready values (NaN → null);
- `launch`: this process's rank, share, device and dtype under a launcher;
- `atomic`: atomic files and folders, and the recovery of a killed folder swap;
- `registry`: names → objects (lazy ``"module:Name"`` targets), with "did you mean" errors;
- `table`: the one `Table` and its renderers (Markdown, CSV, JSON, pandas);
- `bootstrap`: the seeded percentile bootstrap.

The layers above it are listed in docs/architecture.md.
"""
