"""The Python twin of bench_kernels.cpp's empty kernel (scripts/bench_ascendc.py)."""


def empty(x) -> None:
    """Does nothing on every core."""
