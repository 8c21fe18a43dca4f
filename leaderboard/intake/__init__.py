"""A submission coming in: the upload's checks and storing it (`submissions`), its results file's checks
(`results_check`), and who is asking (`identity`)."""
