"""The Explore tab: its layout and handlers (`explore_tab`), its pure views (`explore_views`)."""
