"""The four perception models, each wrapped behind a small batched interface (see `evaluator.perception`)."""
