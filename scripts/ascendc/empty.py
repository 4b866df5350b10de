"""The Python twin of bench_kernels.cpp's empty kernel (scripts/bench_ascendc.py)."""


def empty(x) -> None:  # noqa: ANN001 - a kernel's GM tensor argument
    """Does nothing on every core."""
