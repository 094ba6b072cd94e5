"""Figures the roofline tests share, worked out by hand from the datasheet."""

# H200: 141 GiB of HBM, 4.8 TB/s at the catalog's measured 84.3 % achievable
H200_HBM_BYTES = 141 * 2**30
H200_READ_BYTES_PER_S = 4.8e12 * 0.843
