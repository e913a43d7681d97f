#!/usr/bin/env python3
"""Checks backward version 12's dX staging (src/core/cuda/relation_kl_bwd_tma_dx.cuh) without a GPU.

A model of both sides of a warp's staging area, then a comparison for every element:
* where the TMA tensor reduce-add reads element (row r, column c) of the warp's box: tma_dx_map's box
  (32 columns, D/64 chunks of 32 columns, 16 rows, 1) laid out densely (line l = r * kLines + c // 32
  of 128 bytes, column c % 32 at byte 4 (c % 32) of it), then CU_TENSOR_MAP_SWIZZLE_128B (address
  bits 4-6 ^= bits 7-9) on the shared address (the area 1024-byte aligned);
* where the warp's lanes store it: BwdDxTensorOut::store as written (s0, the per-fragment XOR and
  the immediates), with the wgmma accumulator fragment of lane (g = lane / 4, tq = lane % 4):
  c[i][0..1] = row g, columns 8i + 2tq, + 1; c[i][2..3] = row g + 8, the same columns.
Then the banks of each 8-byte store instruction: per half-warp (16 lanes; 64-bit accesses are
served a half-warp at a time) the number of lanes on the busiest bank, and per warp the
wavefronts (the most 4-byte words on one bank). Also the carve (BwdWgmmaTile / BwdTmaTile sizes)
against the 227 KB limit.
Run: python3 dev/cuda/dx_stage_check.py (prints the figures, exits 1 on a mismatch).
"""
import sys


def swizzle128(addr):
    return addr ^ (((addr >> 7) & 7) << 4)


def carve(D):
    keys, rows, xc = 128, 64, D // 2
    dx_off = (2 * keys + 2 * 2 * rows) * D * 2 + 2 * keys * rows * 2 + 2 * 3 * rows * 4  # BwdWgmmaTile
    v6_bytes = dx_off + 2 * rows * (xc + 8) * 4
    bar_off = (v6_bytes + 7) // 8 * 8  # BwdTmaTile
    tma_bytes = 1024 + bar_off + 2 * 8
    v12_off = (dx_off + 1023) // 1024 * 1024
    v12_end = v12_off + 2 * rows * xc * 4
    return dx_off, v12_off, v12_end, bar_off, tma_bytes


def check(D):
    xc = D // 2
    lines = xc // 32
    ok = True
    dx_off, v12_off, v12_end, bar_off, tma_bytes = carve(D)
    print(f"D = {D}: v6/v11 staging at {dx_off}, v12 staging [{v12_off}, {v12_end}) < barriers at {bar_off}: "
          f"{v12_end <= bar_off}; dynamic shared memory {tma_bytes} <= {227 * 1024}: {tma_bytes <= 227 * 1024}")
    ok &= v12_end <= bar_off and tma_bytes <= 227 * 1024 and v12_off % 1024 == 0
    for warp in range(8):
        base = v12_off + warp * 16 * xc * 4  # relative to the 1024-aligned carve base
        assert base % 1024 == 0
        tma = {}
        for r in range(16):
            for c in range(xc):
                tma[(r, c)] = swizzle128(base + (r * lines + c // 32) * 128 + (c % 32) * 4)
        dev = {}
        stores = []  # (instruction, lane) -> byte address of the 8-byte store
        for lane in range(32):
            g, tq = lane // 4, lane % 4
            s0 = base + g * lines * 128 + (tq & 1) * 8 + (((tq >> 1) ^ ((g * lines) & 7)) << 4)
            for i in range(xc // 8):
                a = (s0 ^ ((((i % 4) * 2) ^ (i // 4)) << 4)) + (i // 4) * 128
                for half, addr in ((0, a), (1, a + 8 * lines * 128)):
                    r = g + 8 * half
                    c = 8 * i + 2 * tq
                    dev[(r, c)] = addr
                    dev[(r, c + 1)] = addr + 4
                    stores.append(((i, half), lane, addr))
        if dev != tma:
            bad = [k for k in tma if dev.get(k) != tma[k]][:5]
            print(f"  warp {warp}: MISMATCH at {bad}")
            ok = False
        if len(set(dev.values())) != 16 * xc:
            print(f"  warp {warp}: addresses not distinct")
            ok = False
    # Banks (the same for every warp: the areas are 1024-byte aligned).
    by_instr = {}
    for key, lane, addr in stores:
        by_instr.setdefault(key, []).append((lane, addr))
    worst_half, worst_waves = 0, 0
    for key, acc in sorted(by_instr.items()):
        for h in (0, 1):
            words = {}
            for lane, addr in acc:
                if lane // 16 != h:
                    continue
                for w in (addr // 4, addr // 4 + 1):
                    words.setdefault(w % 32, set()).add(w)
            worst_half = max(worst_half, max(len(v) for v in words.values()))
        words = {}
        for lane, addr in acc:
            for w in (addr // 4, addr // 4 + 1):
                words.setdefault(w % 32, set()).add(w)
        worst_waves = max(worst_waves, max(len(v) for v in words.values()))
    print(f"  {len(by_instr)} STS.64 a warp; busiest bank in a half-warp: {worst_half} word(s) "
          f"({'conflict-free' if worst_half == 1 else f'{worst_half}-way'}); busiest bank in a warp: "
          f"{worst_waves} words (2 = the minimum for 256 bytes)")
    print(f"  element addresses: {'ok' if ok else 'MISMATCH'}")
    return ok, worst_half


def main():
    ok128, half128 = check(128)
    ok64, _ = check(64)
    ok = ok128 and ok64 and half128 == 1
    print("ok" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
