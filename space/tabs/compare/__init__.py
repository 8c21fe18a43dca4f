"""The Compare tab: its layout and handlers (`compare_tab`), its table and rows' summary (`compare_views`)."""
