"""Tiling of one FLOMS call: how rows and matmul tiles are dealt to cores, and the workspace layout.

Computed on the host (like the op's TilingFunc) and passed to every core; the kernel derives every
index from it, so a core never guesses what another core does.

- TargetProcess / Init / AllReduce split the BT rows over all 2·block_dim vector cores in chunks of
  whole mask bytes (8 rows), so each vector core owns whole target_mask bytes.
- CVProcess cuts the [BT, V] logits into baseM x baseN tiles, numbered row-major, dealt
  round-robin to cube cores (tile t -> cube core t % block_dim); the two vector cores of that AI
  core take the top and bottom half of the tile's rows.
- Workspace (one GM buffer, carved): per cube core an online max and online sum for every row, two
  ping-pong tile buffers, and the masked targets TargetProcess hands to CVProcess (kept apart from
  the masked_target output so that an output's copy-out can be disabled without starving CVProcess).
"""

from __future__ import annotations

from dataclasses import dataclass

from mpnpu import UsageError, get_dtype

_ALIGN = 32

#: Tile sizes for a CPU (the device uses 128 x 256 with K step 64). Chosen by measurement: see
#: the README's "Choosing the defaults".
DEFAULT_BASE_M = 128
DEFAULT_BASE_N = 256
DEFAULT_BASE_K = 128


def _align(n: int) -> int:
    return -(-n // _ALIGN) * _ALIGN


@dataclass(frozen=True)
class Tiling:
    """Everything the kernel needs besides the GM tensors. Picklable, immutable."""

    bt: int
    h: int
    v: int
    vocab_start_index: int
    vocab_end_index: int
    input_dtype: str
    target_dtype: str
    return_logits: bool
    block_dim: int
    base_m: int
    base_n: int
    base_k: int
    rows_per_vector: int  # a multiple of 8
    n_tiles_m: int
    n_tiles_n: int
    probe: str = ""  # diagnosis switch (see probes.py); "" runs the kernel as shipped
    probe_value: float = 0.0  # the case-specific constant of the init-sentinel probe

    # -- work split ---------------------------------------------------------------------------

    @property
    def n_tiles(self) -> int:
        return self.n_tiles_m * self.n_tiles_n

    @property
    def tile_dtype(self) -> str:
        """Memory-saving mode stores the tile in the input dtype; return_logits mode in float32."""
        return "float32" if self.return_logits else self.input_dtype

    def tile(self, t: int) -> tuple[int, int, int, int]:
        """Rows [m0, m1) and columns [n0, n1) of tile t."""
        mi, ni = divmod(t, self.n_tiles_n)
        m0, n0 = mi * self.base_m, ni * self.base_n
        return m0, min(m0 + self.base_m, self.bt), n0, min(n0 + self.base_n, self.v)

    def tiles_of_cube(self, cube: int) -> range:
        return range(cube, self.n_tiles, self.block_dim)

    def vector_rows(self, vector: int) -> tuple[int, int]:
        """Rows [r0, r1) of a vector core (by vector block idx) in Init, TargetProcess, AllReduce."""
        r0 = min(vector * self.rows_per_vector, self.bt)
        return r0, min(r0 + self.rows_per_vector, self.bt)

    @staticmethod
    def half_rows(m0: int, m1: int, sub: int) -> tuple[int, int]:
        """Rows of a tile that vector sub-core ``sub`` handles: top half for 0, bottom for 1."""
        mid = m0 + (m1 - m0 + 1) // 2
        return (m0, mid) if sub == 0 else (mid, m1)

    # -- workspace layout ---------------------------------------------------------------------

    @property
    def _stats_bytes(self) -> int:
        return _align(self.block_dim * self.bt * 4)

    @property
    def online_max_offset(self) -> int:
        return 0

    @property
    def online_sum_offset(self) -> int:
        return self._stats_bytes

    @property
    def tile_buffers_offset(self) -> int:
        return 2 * self._stats_bytes

    @property
    def masked_target_offset(self) -> int:
        tile = self.base_m * self.base_n * get_dtype(self.tile_dtype).itemsize
        return self.tile_buffers_offset + _align(self.block_dim * 2 * tile)

    @property
    def workspace_bytes(self) -> int:
        return self.masked_target_offset + _align(self.bt * get_dtype(self.target_dtype).itemsize)


def make_tiling(
    bt: int,
    h: int,
    v: int,
    vocab_start_index: int,
    vocab_end_index: int,
    input_dtype: str,
    target_dtype: str,
    return_logits: bool,
    block_dim: int,
    base_m: int = DEFAULT_BASE_M,
    base_n: int = DEFAULT_BASE_N,
    base_k: int = DEFAULT_BASE_K,
    probe: str = "",
    probe_value: float = 0.0,
) -> Tiling:
    """The tiling of one call; tile sizes must be positive (base_m even, so tiles split in halves)."""
    for name, value in (("base_m", base_m), ("base_n", base_n), ("base_k", base_k), ("block_dim", block_dim)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise UsageError(f"{name} must be a positive integer, got {value!r}")
    if base_m % 2:
        raise UsageError(f"base_m must be even (each tile is split between two vector cores), got {base_m}")
    n_vector = 2 * block_dim
    mask_bytes = (bt + 7) // 8
    rows_per_vector = -(-mask_bytes // n_vector) * 8 if bt else 8
    return Tiling(
        bt=bt, h=h, v=v, vocab_start_index=vocab_start_index, vocab_end_index=vocab_end_index,
        input_dtype=input_dtype, target_dtype=target_dtype, return_logits=return_logits,
        block_dim=block_dim, base_m=base_m, base_n=base_n, base_k=base_k,
        rows_per_vector=rows_per_vector,
        n_tiles_m=-(-bt // base_m), n_tiles_n=-(-v // base_n), probe=probe, probe_value=probe_value,
    )
