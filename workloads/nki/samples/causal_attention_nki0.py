"""One head of causal self-attention in the NKI 0.x ISA style, softmax(q k^T / sqrt(d) + mask) v
for 128 queries and keys: q and k loaded transposed by the DMA (nisa.dma_transpose), the
scores on the Tensor engine, the causal mask by nisa.affine_select, the row max negated by
nisa.tensor_reduce, the exponentials and their row sums in one nisa.activation (the Scalar
engine's reduce registers), nisa.reciprocal, the probabilities transposed by an identity
matmul (is_transpose) and the weighted sum of v scaled by the reciprocal."""

import numpy as np

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def causal_attention(q, k, v):
    s, d = q.shape
    out = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.shared_hbm)
    ident = nl.shared_identity_matrix(s, dtype=nl.float32)  # (in SBUF from NKI 0.4)
    qt = nl.ndarray((d, s), dtype=nl.float32, buffer=nl.sbuf)  # d on the partitions
    kt = nl.ndarray((d, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_transpose(qt, q)
    nisa.dma_transpose(kt, k)
    vs = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(vs, v)
    scores_ps = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(scores_ps, qt, kt)  # [queries, keys]
    scores = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(scores, scores_ps, nl.multiply, 1.0 / np.sqrt(d))
    masked = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.affine_select(masked, pattern=[[-1, s]], offset=0, channel_multiplier=1,
                       on_true_tile=scores, on_false_value=-9984.0, cmp_op=nl.greater_equal)
    neg_max = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_reduce(neg_max, nl.maximum, masked, axis=1, negate=True, keepdims=True)
    probs = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    row_sum = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.activation(probs, nl.exp, masked, bias=neg_max, reduce_op=nl.add, reduce_res=row_sum,
                    reduce_cmd=nisa.reduce_cmd.reset_reduce)
    inv = nl.ndarray((s, 1), dtype=nl.float32, buffer=nl.sbuf)
    nisa.reciprocal(inv, row_sum)
    pt_ps = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(pt_ps, probs, ident, is_transpose=True)  # keys on the partitions
    pt = nl.ndarray((s, s), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(pt, pt_ps)
    o_ps = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.psum)
    nisa.nc_matmul(o_ps, pt, vs)
    o = nl.ndarray((s, d), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_scalar(o, o_ps, nl.multiply, inv)
    nisa.dma_copy(out, o)
    return out


def main():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((128, 64)).astype(np.float32) for _ in range(3))
    got = nki.simulate(causal_attention)(q, k, v)
    scores = q @ k.T / np.sqrt(64)
    scores = np.where(np.tril(np.ones((128, 128), bool)), scores, -9984.0)
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, p / p.sum(axis=1, keepdims=True) @ v, rtol=1e-4,
                               atol=1e-5)
    print('causal_attention_nki0: values match')


if __name__ == '__main__':
    main()
