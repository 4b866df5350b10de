"""A user's first kernel (issue 21), kept as a test operator: stream compaction over vector cores."""
