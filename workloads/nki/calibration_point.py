"""Benchmarks the project's NKI kernel for one calibration point (scripts/calibrate --nki).

    scripts/nki --config trn1 --stats-out S.json workloads/nki/calibration_point.py \
        vector_add variant=tiled n=25600 row_chunk=1 style=nl

WORKLOAD and the KEY=VALUE parameters are those of calibration/hardware-points.csv (the C++
drivers' names, workloads.md). The kernel is benchmarked on placeholders (no values are
computed); exit status 2 names a point no project NKI kernel covers yet.
"""

import os
import sys

from neuronxcc import nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'kernels'))
import conv2d  # noqa: E402 (the project's kernels, beside this file)
import matmul  # noqa: E402
import transpose  # noqa: E402
import vector_add  # noqa: E402

DTYPES = {'float32': nl.float32, 'bfloat16': nl.bfloat16, 'float16': nl.float16}


def unsupported(why):
    print(f'calibration_point: {why}', file=sys.stderr)
    sys.exit(2)


def vector_add_point(p):
    n = int(p.get('n', 25600))
    variant, style = p.get('variant', 'tiled'), p.get('style', 'nl')
    vec = nt.tensor[[n], nl.float32]
    if variant == 'tiled':
        kernel = vector_add.vector_add_tiled if style == 'nl' else vector_add.vector_add_tiled_isa
        return kernel, (vec, vec), {'row_chunk': int(p.get('row_chunk', 1))}
    if variant == 'stream':
        layout = p.get('layout', 'contiguous')
        kernels = {('contiguous', 'nl'): vector_add.vector_add_stream,
                   ('strided', 'nl'): vector_add.vector_add_stream_strided,
                   ('strided', 'isa'): vector_add.vector_add_stream_isa}
        if (layout, style) not in kernels:
            unsupported(f'no project NKI kernel for vector_add stream layout={layout} '
                        f'style={style}')
        return kernels[(layout, style)], (vec, vec), {'free_dim': int(p.get('free_dim', 2))}
    if variant in ('direct_alloc', 'alloc_bad'):
        kernel = getattr(vector_add, f'vector_add_{variant}')
        return kernel, (vec, vec), {'free_dim': int(p.get('free_dim', 1000)),
                                    'buffers': int(p.get('buffers', 4))}
    unsupported(f'no project NKI kernel for vector_add variant={variant}')


def matmul_point(p):
    m, k, n = int(p['m']), int(p['k']), int(p['n'])
    dtype = DTYPES[p.get('dtype', 'bfloat16')]
    kernel = getattr(matmul, f'matmul_{p.get("variant", "tiled")}', None)
    if kernel is None:
        unsupported(f'no project NKI kernel for matmul variant={p.get("variant")}')
    return kernel, (nt.tensor[[k, m], dtype], nt.tensor[[k, n], dtype]), {}


def transpose_point(p):
    if p.get('style', 'nl') != 'isa':
        unsupported('the project NKI transpose is the 2025 ISA kernel (style=isa)')
    shape = [int(p.get('m', 1024)), int(p.get('n', 1024))]
    return transpose.transpose_2d, (nt.tensor[shape, DTYPES[p.get('dtype', 'float32')]],), {}


def conv2d_point(p):
    if p.get('variant', 'row') != 'row' or p.get('style', 'isa') != 'isa':
        unsupported('the project NKI conv2d is the row kernel (variant=row, style=isa)')
    dtype = DTYPES[p.get('dtype', 'float32')]
    batch, cin, cout = int(p.get('batch', 1)), int(p['in']), int(p['out'])
    k, h, w = int(p.get('filter', 3)), int(p['h']), int(p['w'])
    return conv2d.conv2d_row, (nt.tensor[[batch, cin, h, w], dtype],
                               nt.tensor[[cout, cin, k, k], dtype],
                               nt.tensor[[cout], dtype]), {'pool_size': int(p.get('pool', 1))}


def main():
    if len(sys.argv) < 2:
        unsupported('usage: calibration_point.py WORKLOAD [KEY=VALUE]...')
    workload = sys.argv[1]
    params = dict(a.split('=', 1) for a in sys.argv[2:])
    points = {'vector_add': vector_add_point, 'matmul': matmul_point,
              'transpose': transpose_point, 'conv2d': conv2d_point}
    if workload not in points:
        unsupported(f'no project NKI kernel for {workload} yet (docs/nki.md, "not yet")')
    kernel, args, kwargs = points[workload](params)
    nki.benchmark(kernel, warmup=1, iters=1)(*args, **kwargs)


if __name__ == '__main__':
    main()
