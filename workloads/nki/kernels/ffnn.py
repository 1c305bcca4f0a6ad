"""The project's NKI version of the CS152 lab 6 feed-forward network (workloads.md, "ffnn"):
H = relu(X @ W1 + b1), Z = H @ W2 + b2, P = softmax(Z) by rows, predictions = argmax(P) by rows.
One kernel running the lab's steps in turn (transpose, matmul, bias and activation), the matmul
being one of the four tutorial steps; each step's tiles are dead when the next begins, so the
builder lets the next reuse their memory."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl

import matmul

CHUNK = 2048  # free elements per partition of the row-wise steps' tiles

MATMULS = {
    'tiled': matmul.tiled_into,
    'hoist_load': lambda lhsT, rhs, out: matmul.blocked_into(lhsT, rhs, out, 1, 1),
    'block_free_dimension': lambda lhsT, rhs, out: matmul.blocked_into(lhsT, rhs, out, 2, 2),
    'fully_optimized': matmul.fully_optimized_into,
}


def transpose_into(x, out):
    """out = x.T through the Tensor engine, one pmax x pmax tile at a time."""
    rows, cols = x.shape
    p = nl.tile_size.pmax
    f = min(p, nl.tile_size.gemm_stationary_fmax)
    for i in nl.affine_range(rows // p):
        for j in nl.affine_range(cols // f):
            tile = nl.load(x[i * p:(i + 1) * p, j * f:(j + 1) * f])
            flipped = nisa.nc_transpose(tile)
            back = nl.copy(flipped, dtype=out.dtype)
            nl.store(out[j * f:(j + 1) * f, i * p:(i + 1) * p], value=back)


def bias_relu_into(x, bias, out):
    """out = relu(x + bias), the bias (one value per column) broadcast over the rows."""
    rows, cols = x.shape
    p = nl.tile_size.pmax
    f = min(cols, CHUNK)
    b = nl.ndarray((p, cols), dtype=bias.dtype, buffer=nl.sbuf)
    b[...] = nl.broadcast_to(bias.reshape((1, cols)), shape=(p, cols))
    for r in nl.affine_range(rows // p):
        for j in nl.affine_range(cols // f):
            t = nl.load(x[r * p:(r + 1) * p, j * f:(j + 1) * f])
            t[...] = nl.add(t, b[:, j * f:(j + 1) * f])
            y = nl.relu(t)
            nl.store(out[r * p:(r + 1) * p, j * f:(j + 1) * f], value=y)


def bias_softmax_into(z, bias, probs, predictions=None):
    """probs = softmax(z + bias) by rows; predictions = the argmax of each row."""
    rows, cols = z.shape
    p = nl.tile_size.pmax
    b = nl.ndarray((p, cols), dtype=bias.dtype, buffer=nl.sbuf)
    b[...] = nl.broadcast_to(bias.reshape((1, cols)), shape=(p, cols))
    for r in nl.affine_range(rows // p):
        t = nl.load(z[r * p:(r + 1) * p, :])
        t[...] = nl.add(t, b)
        row_max = nl.max(t, axis=1, keepdims=True)
        t[...] = nl.subtract(t, row_max)
        t[...] = nl.exp(t)
        row_sum = nl.sum(t, axis=1, keepdims=True)
        row_sum[...] = nl.reciprocal(row_sum)
        t[...] = nl.multiply(t, row_sum)
        nl.store(probs[r * p:(r + 1) * p, :], value=t)
        if predictions is not None:
            top = nisa.max8(src=t)
            index = nisa.nc_find_index8(data=t, vals=top)
            nl.store(predictions[r * p:(r + 1) * p], value=index[:, 0:1])


@nki.jit
def ffnn_predict(X, W1, b1, W2, b2, matmul_variant='tiled', predict=True):
    """The lab's forward pass (and, with predict, the predicted classes)."""
    if matmul_variant not in MATMULS:
        raise ValueError(f'matmul_variant must be one of {sorted(MATMULS)}')
    n, d = X.shape
    h, c = W1.shape[1], W2.shape[1]
    f32 = nl.float32
    xT = nl.ndarray((d, n), dtype=f32, buffer=nl.shared_hbm)
    h_pre = nl.ndarray((n, h), dtype=f32, buffer=nl.shared_hbm)
    hidden = nl.ndarray((n, h), dtype=f32, buffer=nl.shared_hbm)
    hT = nl.ndarray((h, n), dtype=f32, buffer=nl.shared_hbm)
    logits = nl.ndarray((n, c), dtype=f32, buffer=nl.shared_hbm)
    probs = nl.ndarray((n, c), dtype=f32, buffer=nl.shared_hbm)
    predictions = nl.ndarray((n,), dtype=nl.int32, buffer=nl.shared_hbm)
    transpose_into(X, xT)
    MATMULS[matmul_variant](xT, W1, h_pre)
    bias_relu_into(h_pre, b1, hidden)
    transpose_into(hidden, hT)
    MATMULS[matmul_variant](hT, W2, logits)
    bias_softmax_into(logits, b2, probs, predictions if predict else None)
    return (probs, predictions) if predict else probs


if __name__ == '__main__':
    # The forward pass against numpy at a small shape with each matmul step, then the latency
    # at the lab's shape (n=2048, d=4096, h=8192, c=2048, fp32).
    import numpy as np
    import neuronxcc.nki.typing as nt

    rng = np.random.default_rng(0)
    n, d, h, c = 256, 512, 1024, 1024
    x = rng.uniform(0, 1, (n, d)).astype(np.float32)
    w1 = ((rng.uniform(0, 1, (d, h)) - 0.5) / np.sqrt(d)).astype(np.float32)
    b1 = ((rng.uniform(0, 1, h) - 0.5) * 0.2).astype(np.float32)
    w2 = ((rng.uniform(0, 1, (h, c)) - 0.5) / np.sqrt(h)).astype(np.float32)
    b2 = ((rng.uniform(0, 1, c) - 0.5) * 0.2).astype(np.float32)
    z = np.maximum(x.astype(np.float64) @ w1 + b1, 0) @ w2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for variant in ('tiled', 'hoist_load', 'block_free_dimension'):
        probs, pred = ffnn_predict(x, w1, b1, w2, b2, matmul_variant=variant)
        np.testing.assert_allclose(probs, want, rtol=1e-3, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(pred).ravel(), want.argmax(axis=1))
    f32 = nl.float32
    bench = nki.benchmark(ffnn_predict, warmup=1, iters=1)
    bench(nt.tensor[[2048, 4096], f32], nt.tensor[[4096, 8192], f32], nt.tensor[[8192], f32],
          nt.tensor[[8192, 2048], f32], nt.tensor[[2048], f32])
    print(f'ffnn_predict CS152: {bench.benchmark_result.nc_latency.get_latency_percentile(50):.1f} us')
