"""The checks of a submission, each a pure policy beside the run that applies it: the spot check
(`spot_check_policy`, `spot_check_run`), the regeneration check (`regeneration_policy`,
`regeneration_run`, with its pairs, `regeneration_pairs`, its outcome, `regeneration_outcome`, and
whether the model it names is public, `model_source`), the fresh draw (`fresh_draw_policy`,
`fresh_draw_run`) and the full re-score (`full_rescore_policy`, `full_rescore_run`); one plan for every
sampled check (`sampling_plan`), the compared fields (`compared_fields`), what the checks run with
(`check_setup`) and a verification run's claim and verdict (`verification_run`)."""
