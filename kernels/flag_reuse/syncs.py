"""Named sync points and flag ids of the cube -> vector tile pipeline: one source of truth for the
kernel, the operator and reports."""

#: cross-core flag ids (mode 2: a cube core and its two vector cores)
FLAG_TILE_READY = 3  # cube -> vector: a tile is in the slot
FLAG_SLOT_FREE = (4, 5)  # vector -> cube: done reading slot 0 / 1, it may be overwritten

SYNC_POINTS: dict[str, str] = {
    "R": f"vector cores wait for flag {FLAG_TILE_READY} (tile ready) before reading a slot",
    "FS": (f"vector cores set flag {FLAG_SLOT_FREE[0]}/{FLAG_SLOT_FREE[1]} (slot free) after reading a slot"
           " - missing in the incident"),
    "FW": (f"cube core waits for flag {FLAG_SLOT_FREE[0]}/{FLAG_SLOT_FREE[1]} (slot free) before overwriting a slot"
           " - missing in the incident"),
}

INCIDENT = frozenset({"FS", "FW"})  # the kernel as written: no "slot free" handshake at all

#: a set is lost: the cube core waits for a release that never comes (the watchdog reports it)
LOST_SET = frozenset({"FS"})

STAGES = ("Pipeline",)
