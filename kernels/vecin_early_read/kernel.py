"""y = 2 * x, tile by tile, on the vector cores, through double-buffered queues (Ascend C's
canonical CopyIn / Compute / CopyOut)::

    CopyIn    x_in = q_in.alloc_tensor(); data_copy(x_in, x[tile])  (MTE2);  q_in.enque(x_in)
    Compute   x_in = q_in.deque()  -- PIPE_V waits for MTE2 (sync point QIN:MTE2_V)
              y_out = q_out.alloc_tensor()  -- PIPE_V waits until MTE3 copied the buffer's last
                                                tile out (QOUT:MTE3_V)
              muls(y_out, x_in, 2)  (V);  q_in.free_tensor(x_in);  q_out.enque(y_out)
    CopyOut   y_out = q_out.deque();  data_copy(y[tile], y_out)  (MTE3);  q_out.free_tensor(y_out)

Dropping QIN:MTE2_V (the incident) lets Muls read the VECIN buffer before MTE2 has filled it: it
scales whatever the buffer held (an earlier tile, or the previous case's). Dropping QOUT:MTE3_V
lets Muls overwrite a VECOUT buffer that MTE3 is still copying out (double-buffer reuse).
"""

from __future__ import annotations

from mpnpu import api as ac
from mpnpu import float32
from mpnpu.api import TPosition


@ac.pipelined
def main(x, y, n_tiles: int, tile: int) -> None:
    if not ac.is_aiv():
        return
    me, n_vector = ac.get_block_idx(), 2 * ac.get_block_num()
    q_in = ac.TQue(TPosition.VECIN, 2, tile * 4, name="QIN")
    q_out = ac.TQue(TPosition.VECOUT, 2, tile * 4, name="QOUT")
    with ac.stage("Scale"):
        for i in range(me, n_tiles, n_vector):
            lo, hi = i * tile, (i + 1) * tile
            x_in = q_in.alloc_tensor(tile, float32)  # CopyIn
            ac.data_copy(x_in, x[lo:hi])
            q_in.enque(x_in)
            x_in = q_in.deque()  # Compute
            y_out = q_out.alloc_tensor(tile, float32)
            ac.muls(y_out, x_in, 2.0)
            q_in.free_tensor(x_in)
            q_out.enque(y_out)
            y_out = q_out.deque()  # CopyOut
            ac.data_copy(y[lo:hi], y_out)
            q_out.free_tensor(y_out)
