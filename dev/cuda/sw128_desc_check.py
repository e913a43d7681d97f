#!/usr/bin/env python3
"""Checks backward version 11's wgmma B descriptors of the 128B-swizzled X tiles without a GPU.

A model of both sides, then a comparison for every element the wgmma reads:
* where the TMA writes element (row r, column c) of an X tile [64 rows][D]: box c // 64 (8 KB, boxes
  side by side in D, the tile 1024-byte aligned), 128 bytes a row, 16-byte chunk c % 64 // 8 of
  row r XORed with r % 8 (CU_TENSOR_MAP_SWIZZLE_128B: address bits 4-6 ^= bits 7-9);
* where wgmma reads B element (k, n) from a descriptor: the canonical layouts of the PTX ISA's
  "Shared Memory Matrix Layout" (CUTLASS's make_gmma_desc states the same), T = 8 16-bit elements:
    K-major,  128B swizzle: ((8, n), (T, 2k)) : ((8T, SBO), (1, T))   (n: 8 rows of 128 bytes, SBO on)
    MN-major, 128B swizzle: ((T, 8, n), (8, k)) : ((1, T, LBO), (8T, SBO))  (n: 64 contiguous, LBO on)
  from the descriptor's start address (bits 0-13, 16-byte units), LBO (16-29), SBO (32-45), then
  the same address-bit swizzle (layout type 1, bits 62-63; base offset 0).
The descriptors are built as src/core/cuda/relation_kl_bwd_tma.cuh builds them (sw128_desc, sw128_desc_mn and the
k-step offsets added to the start-address field). The K-major case is also forward version 8's key
tiles, which pass the reference checks on an H200: an anchor for the swizzle model itself.
Run: python3 dev/cuda/sw128_desc_check.py (prints ok per case, exits 1 on a mismatch).
"""
import sys

BOX_ROWS, BOX_COLS, BOX_BYTES = 64, 64, 64 * 64 * 2


def swizzle128(addr):
    return addr ^ (((addr >> 7) & 7) << 4)


def tma_addr(tile, r, c):
    """Shared address the TMA writes X element (r, c) of a tile at `tile` to."""
    return swizzle128(tile + (c // BOX_COLS) * BOX_BYTES + r * 128 + (c % BOX_COLS) * 2)


# src/core/cuda/relation_kl_sm90.cuh: sw128_desc and sw128_desc_mn<64>.
def sw128_desc(addr):
    return ((addr & 0x3FFFF) >> 4) | (1 << 16) | ((1024 >> 4) << 32) | (1 << 62)


def sw128_desc_mn(addr, box_rows=BOX_ROWS):
    return ((addr & 0x3FFFF) >> 4) | (((box_rows * 128) >> 4) << 16) | ((1024 >> 4) << 32) | (1 << 62)


def decode(desc):
    assert desc >> 62 == 1, "layout type: 128B swizzle"
    assert (desc >> 49) & 7 == 0, "base offset 0"
    return (desc & 0x3FFF) << 4, ((desc >> 16) & 0x3FFF) << 4, ((desc >> 32) & 0x3FFF) << 4


def wgmma_b_addr(desc, k, n, k_major):
    """Shared address wgmma reads B element (k, n) of an m64nNk16 from (k < 16)."""
    start, lbo, sbo = decode(desc)
    if k_major:
        off = (n % 8) * 128 + (n // 8) * sbo + (k % 8) * 2 + (k // 8) * 16
    else:
        off = (n % 8) * 2 + (n % 64 // 8) * 16 + (n // 64) * lbo + (k % 8) * 128 + (k // 8) * sbo
    return swizzle128(start + off)


def check(D, tile):
    bad = 0
    for kk in range(D // 16):
        # S^T = Y X^T: B[n = X row][k = D column], K-major (BwdXSwizzledDesc::k).
        dk = sw128_desc(tile) + (((kk // 4) * BOX_BYTES + (kk % 4) * 32) >> 4)
        for n in range(64):
            for k in range(16):
                bad += wgmma_b_addr(dk, k, n, True) != tma_addr(tile, n, kk * 16 + k)
    for kk in range(64 // 16):
        # dY += dZ^T X_s: B[k = X row][n = D column], MN-major (BwdXSwizzledDesc::mn).
        dm = sw128_desc_mn(tile + kk * 16 * 128)
        for k in range(16):
            for n in range(D):
                bad += wgmma_b_addr(dm, k, n, False) != tma_addr(tile, kk * 16 + k, n)
    return bad


def main():
    failures = 0
    # Tiles where version 11 puts them: X stage s, model m at 1024-aligned offsets (plus a nonzero
    # base, as the rounded-up dynamic shared memory base may be).
    for D in (64, 128):
        x0 = 2 * 128 * D * 2
        for tile in (x0, x0 + 64 * D * 2, x0 + 3 * 64 * D * 2, 1024 + x0):
            bad = check(D, tile)
            failures += bad != 0
            print(f"{'ok' if bad == 0 else 'FAIL'} D={D} tile at {tile}: {bad} mismatched elements")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
