"""Named sync points of the split-hidden RMSNorm: one source of truth for the kernel, the operator
and reports."""

SYNC_POINTS: dict[str, str] = {
    "S1": "SyncAll<true> after PartialSumSq (every vector core's partial sums of squares in GM) "
          "- missing in the incident",
}

INCIDENT = frozenset({"S1"})  # the kernel as written: each core reads the partials right after writing its own

STAGES = ("PartialSumSq", "Normalize")
