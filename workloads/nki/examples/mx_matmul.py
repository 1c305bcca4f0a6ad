"""A matmul C = A^T B of K = 4096 (A [K, 128], B [K, 2048]) two ways, to compare
NeuronCore-v4's MX matmul with a bf16 one: bf16 operands, one nisa.nc_matmul per 128 rows of K
(32 per 512 columns of C), or MXFP8 operands quantized on the host (e4m3fn, the scales as the
Trainium3 guide lays them out), one nisa.nc_matmul_mx per 512 rows of K (each processing element
multiplying 4 pairs a cycle: 4x the bf16 rate), both accumulating in PSUM.

    scripts/nki --config trn3 workloads/nki/examples/mx_matmul.py --way mx
    scripts/nki --config trn3 workloads/nki/examples/mx_matmul.py --way bf16
"""

import argparse

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl

K, M, N, BLOCK = 4096, 128, 2048, 512


@nki.jit
def matmul_bf16(a, b):
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a_tiles = []  # A stays in SBUF: one stationary tile per 128 rows of K
    for k in range(K // 128):
        at = nl.ndarray((128, M), dtype=nl.bfloat16, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a[k * 128:(k + 1) * 128, :])
        a_tiles.append(at)
    for j in range(N // BLOCK):
        acc = nl.ndarray((M, BLOCK), dtype=nl.float32, buffer=nl.psum)
        for k in range(K // 128):
            bt = nl.ndarray((128, BLOCK), dtype=nl.bfloat16, buffer=nl.sbuf)
            nisa.dma_copy(dst=bt, src=b[k * 128:(k + 1) * 128, j * BLOCK:(j + 1) * BLOCK])
            nisa.nc_matmul(dst=acc, stationary=a_tiles[k], moving=bt)
        o = nl.ndarray((M, BLOCK), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=acc)
        nisa.dma_copy(dst=out[:, j * BLOCK:(j + 1) * BLOCK], src=o)
    return out


@nki.jit
def matmul_mx(a_bits, a_scales, b_bits, b_scales):
    """a_bits [K / 4, M] and b_bits [K / 4, N] (uint32: 4 packed e4m3fn values), their scales
    [K / 4, M] and [K / 4, N] (uint8), per 512 rows of K a block of 128 partitions."""
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    a_tiles = []  # A stays in SBUF: one stationary tile (and its scales) per 512 rows of K
    for k in range(K // 512):
        rows = slice(k * 128, (k + 1) * 128)
        at = nl.ndarray((128, M), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
        nisa.dma_copy(dst=at, src=a_bits[rows, :])  # (the bits, as they are)
        asc = nl.ndarray((128, M), dtype=nl.uint8, buffer=nl.sbuf)
        nisa.dma_copy(dst=asc, src=a_scales[rows, :])
        a_tiles.append((at, asc))
    for j in range(N // BLOCK):
        acc = nl.ndarray((M, BLOCK), dtype=nl.float32, buffer=nl.psum)
        for k in range(K // 512):
            rows = slice(k * 128, (k + 1) * 128)
            at, asc = a_tiles[k]
            bt = nl.ndarray((128, BLOCK), dtype=nl.float8_e4m3fn_x4, buffer=nl.sbuf)
            nisa.dma_copy(dst=bt, src=b_bits[rows, j * BLOCK:(j + 1) * BLOCK])
            bsc = nl.ndarray((128, BLOCK), dtype=nl.uint8, buffer=nl.sbuf)
            nisa.dma_copy(dst=bsc, src=b_scales[rows, j * BLOCK:(j + 1) * BLOCK])
            nisa.nc_matmul_mx(dst=acc, stationary=at, moving=bt, stationary_scale=asc,
                              moving_scale=bsc)
        o = nl.ndarray((M, BLOCK), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_copy(dst=o, src=acc)
        nisa.dma_copy(dst=out[:, j * BLOCK:(j + 1) * BLOCK], src=o)
    return out


def quantize(x):
    """x [K, F] as MXFP8 e4m3fn for the MX matmul: per 512 rows of K, [128, F] elements packing
    rows q * 128 + p (q = 0..3) of partition p, and their scales, one per 8 partitions and
    column, X = 2^(floor(log2 max|x|) - 7) stored as its exponent + 127 at partition
    32 (p / 32) + (p % 32) / 8 (the other partitions 0). Returns (bits uint32, scales uint8)."""
    import ml_dtypes
    blocks, cols = x.shape[0] // 512, x.shape[1]
    v = x.astype(np.float32).reshape(blocks, 4, 128, cols).transpose(0, 2, 3, 1)  # [b, p, f, q]
    groups = v.reshape(blocks, 16, 8, cols, 4)
    amax = np.abs(groups).max(axis=(2, 4))  # [b, 16, f]
    e = np.where(amax > 0, np.frexp(amax)[1] - 1 - 7, -127).clip(-127, 127)
    scaled = groups * np.ldexp(1.0, -e)[:, :, None, :, None]
    q8 = np.clip(scaled, -448, 448).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    q8 = q8.reshape(blocks, 128, cols, 4).astype(np.uint32)
    bits = q8[..., 0] | q8[..., 1] << 8 | q8[..., 2] << 16 | q8[..., 3] << 24
    scales = np.zeros((blocks, 128, cols), np.uint8)
    g = np.arange(16)
    scales[:, 32 * (g // 4) + g % 4, :] = (e + 127).astype(np.uint8)
    return bits.reshape(-1, cols), scales.reshape(-1, cols)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--way', choices=['mx', 'bf16'], default='bf16',
                        help='mx: nisa.nc_matmul_mx of MXFP8 (NeuronCore-v4, --config trn3); '
                        'bf16: nisa.nc_matmul (the default)')
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((K, M)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    want = a.T @ b
    if args.way == 'mx':
        run = nki.simulate(matmul_mx)
        got = run(*quantize(a), *quantize(b))
    else:
        run = nki.simulate(matmul_bf16)
        got = run(a.astype(nl.bfloat16), b.astype(nl.bfloat16))
    error = np.linalg.norm(got - want) / np.linalg.norm(want)
    # within a few percent of the typical magnitude (MXFP8 keeps 3 mantissa bits), elementwise
    tolerance = (0.25 if args.way == 'mx' else 0.05) * np.sqrt(np.mean(want ** 2))
    assert np.allclose(got, want, rtol=0, atol=tolerance), f'relative error {error:.3f}'
    print(f'matmul ({args.way}): {run.latency_us:.2f} us, relative error {error:.4f}')


if __name__ == '__main__':
    main()
