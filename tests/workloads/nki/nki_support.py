"""What the NKI frontend tests share: running a kernel and its C++ driver on this process's
platform (TRNSIM_NKI_CONFIG) and comparing their statistics."""

import json

import numpy as np

import trnsim.nki as nki
from trnsim.nki import _runner

ENGINES = ('pe', 'dve', 'act', 'pool', 'sp')


def stat(stats, path):
    return _runner._stat(stats, path)


def driver_stats(workload, params):
    """Statistics of the C++ driver's program for `workload` with `params`."""
    p = _runner.platform()
    prog = p.build_workload(workload, {k: str(v) for k, v in params.items()})
    return json.loads(p.run(prog, f'driver {workload}'))


def frontend_stats(kernel, *args, **kwargs):
    """Statistics of the program the frontend records for `kernel` (no values computed)."""
    tr = nki.trace_kernel(kernel, args, kwargs, False)
    return json.loads(_runner.platform().run(tr.program, tr.description))


def counts(stats):
    c = {e: stat(stats, f'engines.{e}.instructions') for e in ENGINES}
    c['dma'] = stat(stats, 'dma.transfers')
    return c


def compute_instructions(stats):
    """The Vector and Scalar engines' instructions other than DMA triggers: the elementwise
    work, on whichever of the two the compiler put it."""
    total = 0
    for e in ('dve', 'act'):
        ops = stats['engines'][e].get('opcodes', {})
        total += sum(v['count'] for k, v in ops.items() if k != 'dma_trigger')
    return total


def config_name():
    return _runner.platform().name


def config_path():
    return _runner.platform().path


class Comparison:
    """Frontend versus driver: instruction and transfer counts, and latency."""

    def __init__(self, name, front, driver):
        self.name = name
        self.front, self.driver = counts(front), counts(driver)
        self.front_us = stat(front, 'total_time_ns') / 1e3
        self.driver_us = stat(driver, 'total_time_ns') / 1e3
        self.diff_pct = 100.0 * (self.front_us - self.driver_us) / self.driver_us

    def report(self):
        same = 'equal' if self.front == self.driver else f'{self.front} vs {self.driver}'
        print(f'{config_name()} {self.name:34s} counts {same}; latency frontend '
              f'{self.front_us:10.3f} us, driver {self.driver_us:10.3f} us '
              f'({self.diff_pct:+.3f} %)', flush=True)


def random_inputs(*shapes, dtype=np.float32, seed=7, lo=0.0, hi=1.0):
    rng = np.random.default_rng(seed)
    out = [rng.uniform(lo, hi, size=s).astype(np.float32) for s in shapes]
    if dtype == 'bfloat16':
        out = [nki.as_bfloat16(x) for x in out]
    return out


def conv2d_reference(x, w, bias, pool):
    """conv2d (stride 1, no padding) plus bias, then the max over pool x pool windows, in
    float64."""
    batch, cout = x.shape[0], w.shape[0]
    k = w.shape[2]
    oh, ow = x.shape[2] - k + 1, x.shape[3] - k + 1
    out = np.zeros((batch, cout, oh, ow))
    xd, wd = x.astype(np.float64), w.astype(np.float64)
    for m in range(k):
        for n in range(k):
            out += np.einsum('bchw,oc->bohw', xd[:, :, m:m + oh, n:n + ow], wd[:, :, m, n])
    out += bias.astype(np.float64)[None, :, None, None]
    if pool == 2:
        out = out[:, :, :oh // 2 * 2, :ow // 2 * 2].reshape(
            batch, cout, oh // 2, 2, ow // 2, 2).max(axis=(3, 5))
    return out
