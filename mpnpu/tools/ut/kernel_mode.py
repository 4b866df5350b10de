"""The kernel type the chip would launch a unit test's kernel as, for the CPU-debug launches of a test
that never calls SetKernelMode.

The CPU-debug default is MIX_MODE (a cube and two vector cores per block), but on the chip the compiler
launches a kernel as the type it declares (KERNEL_TASK_TYPE_DEFAULT) or, when it declares none, as a
vector-only kernel unless it has cube code. A vector-only kernel that a test launches without
SetKernelMode would otherwise run its vector code on cube cores, which have no UB. mpnpu ut reads the
kernel's own files (those its include walk reaches in the repository) and gives the program the type as
MPNPU_DEFAULT_KERNEL_MODE; a test that calls SetKernelMode still gets the mode it asks for.
"""

from __future__ import annotations

import re

from mpnpu.tools.ut.conditionals import active_text

#: KERNEL_TASK_TYPE_DEFAULT values of this chip class -> the CPU-debug kernel mode that launches those cores
_DECLARED = {
    "KERNEL_TYPE_AIV_ONLY": "aiv", "KERNEL_TYPE_MIX_AIV_1_0": "aiv",
    "KERNEL_TYPE_AIC_ONLY": "aic", "KERNEL_TYPE_MIX_AIC_1_0": "aic",
    "KERNEL_TYPE_MIX_AIC_1_1": "mix", "KERNEL_TYPE_MIX_AIC_1_2": "mix",
}
_TASK_TYPE = re.compile(r"\bKERNEL_TASK_TYPE(?:_DEFAULT)?\s*\((?:[^,()]*,)?\s*(\w+)\s*\)")
#: what only a kernel with cube cores does: cube instructions, the Matmul API, code for cube cores, the
#: flags between a block's cube and vector cores
_CUBE = re.compile(r"\b(?:Mmad|MmadWithSparse|LoadData|LoadDataWithTranspose|Fixpipe|REGIST_MATMUL_OBJ|Matmul\s*<|"
                   r"MatmulImpl|ASCEND_IS_AIC|CrossCoreSetFlag|CrossCoreWaitFlag|"
                   r"KERNEL_TYPE_MIX_AIC_1_[12])\b")
#: the kernel function's own qualifier: __mix__(cube, vector) per block, or __cube__ (cube cores only)
_MIX = re.compile(r"\b__mix__\s*\(\s*(\d)\s*,\s*(\d)\s*\)")
_CUBE_ONLY = re.compile(r"\b__cube__\b")
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def launched_mode(texts: list[str]) -> str:
    """'aiv', 'aic' or 'mix': the first type of this chip class the kernel's files declare; else what a
    ``__mix__(c, v)`` or ``__cube__`` kernel qualifier says; else 'mix' when any file has cube code,
    'aiv' when none does."""
    cleaned = [_COMMENT.sub(" ", t) for t in texts]
    for text in cleaned:
        for m in _TASK_TYPE.finditer(text):
            if m.group(1) in _DECLARED:
                return _DECLARED[m.group(1)]
    for text in cleaned:
        mix = _MIX.search(text)
        if mix:
            return {("1", "0"): "aic", ("0", "1"): "aiv"}.get((mix.group(1), mix.group(2)), "mix")
        if _CUBE_ONLY.search(text):
            return "aic"
    return "mix" if any(_CUBE.search(t) for t in cleaned) else "aiv"


def kernel_mode_of(files: list[str], defines: dict[str, str] | None = None) -> str:
    """:func:`launched_mode` of the files' texts (unreadable ones left out), read without the ``#if``
    branches that the build's ``defines`` rule out (a sample's other scenarios)."""
    texts = []
    for path in files:
        try:
            with open(path, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        texts.append(active_text(_COMMENT.sub(" ", text), defines) if defines else text)
    return launched_mode(texts)
