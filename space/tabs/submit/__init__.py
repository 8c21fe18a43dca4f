"""The Submit tab: its layout (`submit_tab`), its handlers (`submit_handlers`), its pure views (`submit_views`)."""
