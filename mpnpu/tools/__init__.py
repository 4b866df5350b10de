"""Tools above the report layer: what runs a user's program or kernel end to end and prints its
reports. ``run`` (``mpnpu run``: one compiled kernel on ``.bin`` files) and ``cpudebug`` (the
embedded side of a CPU-debug unit test built with ``python -m mpnpu.ascendc --cflags --libs``)."""
