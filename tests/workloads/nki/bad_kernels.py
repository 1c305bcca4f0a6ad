"""Kernels with the mistakes the real toolchain reports; each faulty line carries a marker
comment naming its test (nki_errors_test finds the line by it)."""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.jit
def too_many_partitions(a):
    t = nl.ndarray((256, 4), dtype=nl.float32, buffer=nl.sbuf)  # ERROR: partitions_decl
    return a


@nki.jit
def load_too_many_partitions(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)  # ERROR: partitions_load
    nl.store(out, value=t)
    return out


@nki.jit
def sbuf_overflow(a):
    big = nl.ndarray((128, 60000), dtype=nl.float32, buffer=nl.sbuf)  # ERROR: sbuf
    big[...] = 0.0
    return a


@nki.jit
def psum_overflow(a):
    t = nl.zeros((9, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)  # ERROR: psum
    return a


@nki.jit
def psum_tile_too_big(a):
    t = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.psum)  # ERROR: psum_tile
    return a


@nki.jit
def shape_mismatch(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    nl.store(out, value=nl.add(x, y))  # ERROR: shape
    return out


@nki.jit
def moving_too_wide(lhsT, rhs):
    s = nl.load(lhsT)
    m = nl.load(rhs)
    r = nisa.nc_matmul(s, m)  # ERROR: moving
    return lhsT


@nki.jit
def masked(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a, mask=(nl.arange(128) < 64))  # ERROR: mask
    nl.store(out, value=t)
    return out


@nki.jit
def reversed_access(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[:, ::-1])  # ERROR: pattern
    nl.store(out, value=t)
    return out


@nki.jit
def unknown_api(a):
    t = nl.rms_norm(nl.load(a))  # ERROR: unknown
    return a


@nki.jit
def unknown_attribute(a):
    t = nl.load(a[0:a.stride_bytes[0]])  # ERROR: attribute
    return a


@nki.jit
def store_from_psum(a):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    t = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.psum)
    t[...] = nl.transpose(nl.load(a))
    nisa.dma_copy(dst=out, src=t)  # ERROR: psum_dma
    return out


@nki.jit
def returns_a_tile(a):  # ERROR: return
    return nl.load(a)


@nki.jit
def takes_doubles(a):  # ERROR: dtype
    return a


@nki.jit
def out_of_bounds(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    i_p = nl.arange(128)[:, None]
    t = nl.load(a[64 + i_p])  # ERROR: oob
    nl.store(out[i_p], value=t)
    return out
