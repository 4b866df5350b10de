"""In-place double buffering with explicit flags: refilling a buffer waits for its copy-out (MTE3 -> MTE2)."""
