"""The Annotate tab: its layout (`annotate_tab`), its handlers (`annotate_handlers`), its pure views
(`annotate_views`) and the sample's images (`annotation_images`)."""
