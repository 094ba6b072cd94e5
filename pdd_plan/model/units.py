"""Unit constants and the one place human units (YAML keys, reports) meet SI floats.

Memory is counted in bytes, networks in bits, always. Names carry the unit.
"""

KIB_BYTES = 1024
MIB_BYTES = 1024**2
GIB_BYTES = 1024**3
KB_BYTES = 1e3
MB_BYTES = 1e6
GB_BYTES = 1e9
TB_BYTES = 1e12
GBIT_BITS = 1e9
TERA = 1e12
MS_S = 1e-3
US_S = 1e-6
HOURS_PER_MONTH = 730.0  # 8,760 h / 12: the convention of cloud price lists
BITS_PER_BYTE = 8

# Bytes per element of a storage dtype, block scales included: fp4 / mxfp4 keep one 8-bit
# scale per 32 values; int4 (compressed-tensors, group 32) one 16-bit scale per 32 values.
# fp8's one fp32 scale per 128x128 block is under 0.03 % and left out.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5 + 1.0 / 32,
    "mxfp4": 0.5 + 1.0 / 32,
    "int4": 0.5 + 2.0 / 32,
}


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of `dtype`; KeyError names the known dtypes."""
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise KeyError(f"unknown dtype {dtype!r}; known: {', '.join(DTYPE_BYTES)}") from None


def format_bytes(n_bytes: float) -> str:
    """Binary units for memory: 70,272 B -> '68.6 KiB'."""
    for unit, size in (
        ("TiB", 1024**4),
        ("GiB", GIB_BYTES),
        ("MiB", MIB_BYTES),
        ("KiB", KIB_BYTES),
    ):
        if abs(n_bytes) >= size:
            return f"{n_bytes / size:,.1f} {unit}"
    return f"{n_bytes:,.0f} B"


def format_count(n: float) -> str:
    """Parameter and FLOP counts: 6.71e11 -> '671.0 G'."""
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(n) >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n:,.0f}"
