"""The Score tab: its layout (`score_tab`), its handlers (`score_handlers`), its pure views
(`score_views`) and the judge panel beside the verdict (`judge_panel`)."""
