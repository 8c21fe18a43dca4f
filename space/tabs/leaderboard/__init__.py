"""The Leaderboard tab: its layout and handlers (`leaderboard_tab`), the board's pure views
(`leaderboard_views`), an entry's page and reproduction marks (`entry_views`), and the model detail's
figures (`detail_figures`, wired by `detail_figures_tab`)."""
