"""The kernel's named sync points and the variants built from them. One source of truth: the
kernel passes these names to the device API, the operator publishes them (``sync_points``), so the
tools accept them in --drop-sync, and the reports and the race detector print them.

A launch can drop any subset (``Device.launch_with(LaunchOptions(drop_syncs=...), ...)``): the named call is skipped,
nothing else changes. That is how the incident is reproduced without editing the kernel.
"""

from __future__ import annotations

#: cross-core flag ids (mode 2, cube <-> its two vector cores)
FLAG_TILE_READY = 5  # cube -> vector: a tile is in its ping-pong buffer
FLAG_BUFFER_FREE = (6, 7)  # vector -> cube: ping-pong buffer 0 / 1 may be overwritten

SYNC_POINTS: dict[str, str] = {
    "S0": "SyncAll after InitOutputAndWorkspace (workspace and predicted_logits initialised)",
    "S1": "SyncAll after TargetProcess (masked_target and target_mask written) - missing in the incident",
    "S2": "SyncAll after CVProcess (all partial max/sum and gathered logits in GM)",
    "W5": f"vector cores wait for flag {FLAG_TILE_READY} (tile ready) before reading a tile",
    "W67": f"cube core waits for flags {FLAG_BUFFER_FREE[0]}/{FLAG_BUFFER_FREE[1]} (buffer released) "
           "before reusing a ping-pong buffer",
}

#: variant name -> sync points it drops
VARIANTS: dict[str, frozenset[str]] = {
    "incident": frozenset({"S1"}),  # the kernel as it shipped
    "fixed": frozenset(),  # SyncAll<false>() between TargetProcess and CVProcess restored
}

STAGES = ("InitOutputAndWorkspace", "TargetProcess", "CVProcess", "AllReduceProcess")
