"""y = x + 1, tile by tile, in place in two UB buffers (ping-pong), ordered with explicit flags::

    for tile k (buffer b = k % 2):
        wait_flag<MTE3_MTE2>(b)   MTE2 waits until buffer b's last tile was copied out   (sync R)
        data_copy(buf[b], x[k])   MTE2
        set/wait_flag<MTE2_V>     PIPE_V waits for the copy-in
        adds(buf[b], buf[b], 1)   V, in place
        set/wait_flag<V_MTE3>     MTE3 waits for PIPE_V
        data_copy(y[k], buf[b])   MTE3
        set_flag<MTE3_MTE2>(b)    buffer b may be refilled once this copy-out completed  (sync R)

Dropping R (the incident) lets MTE2 refill buffer b with tile k+2 while MTE3 is still copying
tile k out of it: y[k] receives tile k+2's bytes.
"""

from __future__ import annotations

from mpnpu import api as ac
from mpnpu import float32
from mpnpu.api import HardEvent, TPosition


@ac.pipelined
def main(x, y, n_tiles: int, tile: int) -> None:
    if not ac.is_aiv():
        return
    me, n_vector = ac.get_block_idx(), 2 * ac.get_block_num()
    tpipe = ac.get_tpipe()
    bufs = [ac.alloc_local(TPosition.VECCALC, tile, float32) for _ in range(2)]
    refill = [tpipe.alloc_event_id(HardEvent.MTE3_MTE2) for _ in range(2)]
    filled = tpipe.alloc_event_id(HardEvent.MTE2_V)
    computed = tpipe.alloc_event_id(HardEvent.V_MTE3)
    mine = range(me, n_tiles, n_vector)
    with ac.stage("AddOne"):
        for k, i in enumerate(mine):
            b = k % 2
            buf = bufs[b]
            if k >= 2:
                ac.wait_flag(HardEvent.MTE3_MTE2, refill[b], name="R")
            ac.data_copy(buf, x[i * tile:(i + 1) * tile])
            ac.set_flag(HardEvent.MTE2_V, filled, name="F")
            ac.wait_flag(HardEvent.MTE2_V, filled, name="F")
            ac.adds(buf, buf, 1.0)
            ac.set_flag(HardEvent.V_MTE3, computed, name="C")
            ac.wait_flag(HardEvent.V_MTE3, computed, name="C")
            ac.data_copy(y[i * tile:(i + 1) * tile], buf)
            ac.set_flag(HardEvent.MTE3_MTE2, refill[b], name="R")
        # Take back the last two buffers' flags so that none is left raised when the kernel ends.
        for k in range(max(0, len(mine) - 2), len(mine)):
            ac.wait_flag(HardEvent.MTE3_MTE2, refill[k % 2], name="R")
