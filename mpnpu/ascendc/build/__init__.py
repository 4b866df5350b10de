"""Building Ascend C sources into what mpnpu runs: kernel libraries (``compiler``, with the
precompiled header ``pch``), the library a CPU-debug unit test links (``cpudebug_lib``), the
stage-hook build that inserts syncs at function boundaries (``stagehooks``), and the sync points
read from a kernel's source (``syncpoints``)."""
