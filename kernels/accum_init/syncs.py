"""Named sync points of the split-K matmul: one source of truth for the kernel, the operator and reports."""

SYNC_POINTS: dict[str, str] = {
    "S0": "SyncAll after InitOutput (c zeroed by the vector cores) - missing in the incident",
}

INCIDENT = frozenset({"S0"})  # the kernel as written: the cube cores start adding into c at once

STAGES = ("InitOutput", "SplitKMatmul")
