"""What the cube core's L1 -> L0 loads write, from the API pages, in numpy (independently of the
headers): the img2col load (LoadData with LoadData3DParamsV2 / V2Pro and the registers it reads),
LoadDataWithTranspose's squares and LoadData2DParamsV2's fractal blocks.

Each function takes the source elements as they are in L1 and the destination's elements before the
call, and returns the destination after it (elements the call does not write keep their value).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FRACTAL_BYTES = 512


def c0_of(dtype: np.dtype) -> int:
    """Elements in 32 bytes: the channel block of a feature map, the K width of an L0A fractal."""
    return 32 // np.dtype(dtype).itemsize


@dataclass(frozen=True)
class Img2col:
    l1h: int
    l1w: int
    channels: int
    k_ext: int
    m_ext: int
    k_start: int = 0
    m_start: int = 0
    stride: tuple[int, int] = (1, 1)  # (h, w)
    filt: tuple[int, int] = (1, 1)  # (h, w)
    dil: tuple[int, int] = (1, 1)  # (h, w)
    pad: tuple[int, int, int, int] = (0, 0, 0, 0)  # left, right, top, bottom
    pad_value: int = 0
    transpose: bool = False
    repeat_time: int = 1
    repeat_stride: int = 0
    repeat_mode: int = 0
    boundary: int = 0  # bytes; the source starts at L1 address 0 in these tests


def _wrapped(src: np.ndarray, boundary: int) -> np.ndarray:
    """The source as the load sees it when L1 addresses at or past ``boundary`` read address mod boundary."""
    if not boundary:
        return src
    size = src.dtype.itemsize
    addr = np.arange(src.size) * size
    return src[(addr % boundary) // size]


def img2col_matrix(src: np.ndarray, g: Img2col, rows: int, cols: int) -> np.ndarray:
    """Rows [0, rows) and columns [0, cols) of the img2col matrix of the NC1HWC0 map in ``src``.

    Rows past the Ho x Wo output positions continue the same arithmetic (ho = m // Wo keeps growing),
    so they read the map's lower rows or the padding; columns past the map's channel blocks are padding.
    """
    c0 = c0_of(src.dtype)
    c1 = g.channels // c0
    fm = _wrapped(src, g.boundary)[: c1 * g.l1h * g.l1w * c0].reshape(c1, g.l1h, g.l1w, c0)
    (sh, sw), (fh, fw), (dh, dw) = g.stride, g.filt, g.dil
    left, right, top, bottom = g.pad
    span_h, span_w = (fh - 1) * dh + 1, (fw - 1) * dw + 1
    wo = (g.l1w + left + right - span_w) // sw + 1
    ho_needed = -(-rows // wo)
    tall = max(g.l1h + top + bottom, (ho_needed - 1) * sh + span_h)
    padded = np.full((c1, tall, g.l1w + left + right, c0), g.pad_value, dtype=src.dtype)
    padded[:, top:top + g.l1h, left:left + g.l1w] = fm
    blocks = []
    for c in range(c1):
        for kh in range(fh):
            for kw in range(fw):
                win = padded[c, kh * dh::sh][:ho_needed, kw * dw::sw][:, :wo]
                blocks.append(win.reshape(-1, c0)[:rows])
    x = np.concatenate(blocks, axis=1)
    if x.shape[1] < cols:
        extra = np.full((rows, cols - x.shape[1]), g.pad_value, dtype=src.dtype)
        x = np.concatenate([x, extra], axis=1)
    return x[:, :cols]


def _up(n: int, a: int) -> int:
    return -(-n // a) * a


def img2col_load(src: np.ndarray, dst: np.ndarray, g: Img2col, to_l0b: bool) -> np.ndarray:
    """The destination after the img2col load of ``g`` into L0A (``to_l0b`` False) or L0B."""
    c0 = c0_of(src.dtype)
    m16, kc = _up(g.m_ext, 16), _up(g.k_ext, c0)
    reps = range(g.repeat_time)
    if g.repeat_mode == 0:
        last = g.m_start + (g.repeat_time - 1) * g.repeat_stride * 16 + m16
        x = img2col_matrix(src, g, last, g.k_start + kc)
        block = np.concatenate([x[g.m_start + i * g.repeat_stride * 16:][:m16, g.k_start:] for i in reps], axis=0)
    else:
        last = g.k_start + (g.repeat_time - 1) * g.repeat_stride * c0 + kc
        x = img2col_matrix(src, g, g.m_start + m16, last)
        block = np.concatenate([x[g.m_start:, g.k_start + i * g.repeat_stride * c0:][:, :kc] for i in reps], axis=1)
    rows, cols = block.shape
    out = dst.copy()
    keep = np.empty((0,), dtype=bool)
    if to_l0b:  # Zn of the block: C0 x 16 fractals, fractal (r // C0, c // 16), columns inside
        n16 = _up(cols, 16)
        full = np.zeros((rows, n16), dtype=src.dtype)
        full[:, :cols] = block
        written = np.zeros((rows, n16), dtype=bool)
        written[:, :cols] = True
        order = (rows // c0, c0, n16 // 16, 16)
        flat = full.reshape(order).transpose(0, 2, 3, 1).ravel()
        keep = written.reshape(order).transpose(0, 2, 3, 1).ravel()
    elif not g.transpose:  # Zz of the block: 16 x C0 fractals, rows inside
        order = (rows // 16, 16, cols // c0, c0)
        flat = block.reshape(order).transpose(0, 2, 1, 3).ravel()
        keep = np.ones(flat.size, dtype=bool)
    else:  # Zz of the block's transpose (cols x rows), its rows rounded up to 16
        r16 = _up(cols, 16)
        full = np.zeros((r16, rows), dtype=src.dtype)
        full[:cols] = block.T
        written = np.zeros((r16, rows), dtype=bool)
        written[:cols] = True
        order = (r16 // 16, 16, rows // c0, c0)
        flat = full.reshape(order).transpose(0, 2, 1, 3).ravel()
        keep = written.reshape(order).transpose(0, 2, 1, 3).ravel()
    head = out[: flat.size]
    head[keep] = flat[keep]
    return out


def with_transpose(src: np.ndarray, dst: np.ndarray, start: int, repeats: int, src_stride: int, dst_gap: int,
                   frac_gap: int) -> np.ndarray:
    """LoadDataWithTranspose: per repeat one square (8-bit: two stacked 16 x 32 fractals; 16-bit: one
    16 x 16; 32-bit: two side-by-side 16 x 8), transposed and split into the same fractals."""
    size = src.dtype.itemsize
    fe = FRACTAL_BYTES // size
    out = dst.copy()
    for i in range(repeats):
        at = i * (1 + dst_gap) * fe
        second = at + (1 + frac_gap) * fe
        if size == 2:
            q = src[(start + i * src_stride) * fe:][:fe].reshape(16, 16)
            out[at:at + fe] = q.T.ravel()
            continue
        q = src[(start + i * src_stride) * 2 * fe:][:2 * fe]
        if size == 1:
            t = q.reshape(32, 32).T
            parts = (t[:16], t[16:])
        else:
            t = np.hstack([q[:fe].reshape(16, 8), q[fe:].reshape(16, 8)]).T
            parts = (t[:, :8], t[:, 8:])
        out[at:at + fe] = parts[0].ravel()
        out[second:second + fe] = parts[1].ravel()
    return out


def load_2d_v2(src: np.ndarray, dst: np.ndarray, m_start: int, k_start: int, m_step: int, k_step: int,
               src_stride: int, dst_stride: int, transpose: bool) -> np.ndarray:
    """LoadData2DParamsV2: an m_step x k_step block of fractals, source fractal (i, j) at
    (k_start * src_stride + m_start) + j * src_stride + i, destination fractal j * dst_stride + i."""
    fe = FRACTAL_BYTES // src.dtype.itemsize
    out = dst.copy()
    first = k_start * src_stride + m_start
    for j in range(k_step):
        for i in range(m_step):
            f = src[(first + j * src_stride + i) * fe:][:fe]
            if transpose:
                f = f.reshape(16, 16).T.ravel()
            out[(j * dst_stride + i) * fe:][:fe] = f
    return out
