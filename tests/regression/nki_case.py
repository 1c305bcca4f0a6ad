"""One NKI golden regression case (tests/regression/cases.txt, run through scripts/nki):
benchmarks a kernel of workloads/nki/kernels or workloads/nki/examples on inputs given by
shape only, so that its statistics can be compared with a golden dump.

    scripts/nki --config trn1 --stats-out S.json tests/regression/nki_case.py \
        matmul:matmul_tiled bfloat16[512,256] bfloat16[512,1024]

Arguments: MODULE:KERNEL, then each input as DTYPE[D0,D1,...], then the kernel's keyword
arguments as KEY=VALUE (integers, or True/False, or text); `@grid=4,2` launches the kernel on
that SPMD grid (kernel[4, 2]).
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
for folder in ('kernels', 'examples', 'samples'):
    sys.path.insert(0, os.path.join(ROOT, 'workloads', 'nki', folder))

import neuronxcc.nki as nki  # noqa: E402 (after the kernels' folders are on the path)
import neuronxcc.nki.language as nl  # noqa: E402
import neuronxcc.nki.typing as nt  # noqa: E402

INPUT = re.compile(r'^(\w+)\[([\d,]+)\]$')


def value(text):
    if text in ('True', 'False'):
        return text == 'True'
    try:
        return int(text)
    except ValueError:
        return text


def main(argv):
    if not argv or ':' not in argv[0]:
        sys.exit('usage: nki_case.py MODULE:KERNEL [DTYPE[SHAPE]...] [KEY=VALUE...]')
    module, name = argv[0].split(':')
    kernel = getattr(__import__(module), name)
    args, kwargs = [], {}
    for a in argv[1:]:
        m = INPUT.match(a)
        if a.startswith('@grid='):
            kernel = kernel[tuple(int(d) for d in a[len('@grid='):].split(','))]
        elif m:
            shape = [int(d) for d in m.group(2).split(',')]
            args.append(nt.tensor[shape, getattr(nl, m.group(1))])
        else:
            key, _, text = a.partition('=')
            kwargs[key] = value(text)
    nki.benchmark(kernel, warmup=1, iters=1)(*args, **kwargs)


if __name__ == '__main__':
    main(sys.argv[1:])
