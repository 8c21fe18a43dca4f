"""What the Gallery and Compare tabs both read of the verified entries: their records and images, fetched
lazily and kept under the cache bound (`verified_source`), the entries as the leaderboard ranks them and
one image's full view with its layout (`verified_entries`), and the rows, captions and drawings both
tabs show (`verified_views`)."""
