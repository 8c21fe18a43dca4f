"""What the leaderboard holds and how it changes: an `Entry` per submission (`entries`), its SQLite and
Hub dataset backends (`sqlite_store`, `hub_store`, `annotation_store`), the state machine's rules (`states`),
what is ranked (`ranking`) and where a submission's images are read from (`image_sources`)."""
