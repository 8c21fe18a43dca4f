"""The Gallery tab: its layout and handlers (`gallery_tab`), its filters and pages (`gallery_views`)."""
