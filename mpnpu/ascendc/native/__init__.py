"""The native runtime of a compiled kernel in a core process: the C ABI's ctypes mirror (``abi``),
loading a library and running one launch through it (``bridge``), the library's own serving loop
(``serve``) and the per-allocation GM windows a compiled kernel's pointers point into
(``windows``). The C++ side is ``include/mpnpu/native/``."""
