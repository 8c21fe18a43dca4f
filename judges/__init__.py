"""VLM judges: the paper's baselines (Tables 2, 6, 8–10) in three question modes, same record shape as the scorer."""
