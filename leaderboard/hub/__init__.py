"""The leaderboard on the Hub: a verified entry's `.eval_results` (`entry_eval_results`), the Hub's own
leaderboard checked against ours (`hub_check`), and their commands (`hub_cli`)."""
