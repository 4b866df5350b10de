"""Named sync points of the matmul + bias + ReLU kernel: one source of truth for the kernel, the
operator and reports."""

SYNC_POINTS: dict[str, str] = {
    "V1": "SyncAll<true> (vector cores only) after Prepare: every vector core's slice of the bias in GM",
    "S1": "SyncAll (all cores) after Prepare: the cube core's matmul result in GM - missing in the incident",
}

INCIDENT = frozenset({"S1"})  # the kernel as written: only the vector cores' barrier

STAGES = ("Prepare", "Epilogue")
