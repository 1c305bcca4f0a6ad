"""scripts/nki-library's contract with the NKI Library's test framework, on a miniature library
written here (the interfaces the driver relies on, as aws-neuron/nki-library's test utilities
give them): a kernel's test passes with the library's comparator and reports the model's
latency; a wrong reference fails; a large shape is skipped, unless --all-shapes; --smallest
runs one case a test class; a missing library is an error (exit 2)."""

import json
import os
import subprocess
import tempfile
import textwrap
import unittest

SOURCE = os.environ['TRNSIM_SOURCE_DIR']
DRIVER = os.path.join(SOURCE, 'scripts', 'nki-library')

FILES = {
    'test/__init__.py': '',
    'test/utils/__init__.py': '',
    'test/utils/simulation_setup.py': '''
        import builtins, sys
        import nki_cpu_simulator.nki.builtin as sim_builtin
        import nki_cpu_simulator.nki.isa as sim_nisa
        import nki_cpu_simulator.nki.language as sim_nl
        from nki_cpu_simulator import nki as sim_nki

        def setup_simulation_mode():
            builtins.builtin = sim_builtin
            sys.modules["nki"] = sim_nki
            sys.modules["nki.language"] = sim_nl
            sys.modules["nki.isa"] = sim_nisa
        ''',
    'test/utils/common_dataclasses.py': '''
        from dataclasses import dataclass, field
        from enum import Enum
        from typing import Any, Callable, Optional

        class Platforms(Enum):
            TRN2 = "trn2"
            TRN3 = "trn3"

            def get_nc_gen(self):
                return {"trn2": "gen3", "trn3": "gen4"}[self.value]

        @dataclass
        class CompilerArgs:
            logical_nc_config: Optional[int] = 1
            platform_target: Platforms = Platforms.TRN2

        @dataclass
        class LazyGoldenGenerator:
            output_ndarray: dict
            lazy_golden_generator: Optional[Callable] = None

            @property
            def golden(self):
                return None if self.lazy_golden_generator is None else self.lazy_golden_generator()

        @dataclass
        class CustomValidatorWithOutputTensorData:
            validator: Any
            output_ndarray: Any

            @property
            def dtype(self):
                return self.output_ndarray.dtype

        @dataclass
        class ValidationArgs:
            golden_output: Any
            relative_accuracy: float = 1e-5
            absolute_accuracy: float = 1e-8

        @dataclass
        class KernelArgs:
            kernel_func: Callable
            compiler_input: CompilerArgs = field(default_factory=CompilerArgs)
            kernel_input: Optional[dict] = None
            validation_args: Optional[ValidationArgs] = None

        def normalize_golden_output(golden):
            return golden.output_ndarray if isinstance(golden, LazyGoldenGenerator) else golden
        ''',
    'test/utils/metrics_collector.py': '''
        class NoopMetricsCollector:
            pass
        ''',
    'test/utils/coverage_parametrized_tests.py': '''
        def generate_parametrized_test_case(params, coverage, filter_func=None, **_):
            return [dict(zip(params, values)) for values in zip(*params.values())]

        def extract_parametrize_args(params, cases):
            names = list(params) + ["is_negative_test_case"]
            return names, [[c[n] for n in params] + [False] for c in cases], None
        ''',
    'test/utils/ranged_test_harness.py': '''
        class RangeTestHarness:
            def __init__(self, config):
                self.config = config

            def get_unique_test_cases(self):
                return [], []
        ''',
    'test/integration/__init__.py': '',
    'test/integration/nkilib/__init__.py': '',
    'test/integration/nkilib/utils/__init__.py': '',
    'test/integration/nkilib/utils/comparators.py': '''
        import numpy as np

        def maxAllClose(a, b, rtol=1e-5, atol=1e-8, verbose=0, **_):
            return bool(np.all(np.abs(a - b) <= atol + rtol * np.max(np.abs(b))))
        ''',
    'test/integration/nkilib/core/__init__.py': '',
    'test/integration/nkilib/core/add/__init__.py': '',
    'test/integration/nkilib/core/add/test_add.py': '''
        import numpy as np
        import pytest
        from test.utils.common_dataclasses import (CompilerArgs, KernelArgs,
                                                   LazyGoldenGenerator, ValidationArgs)
        from nkilib_src.kernels import add_rows

        def run(test_manager, rows, wrong=False):
            a = np.arange(rows * 64, dtype=np.float32).reshape(rows, 64)
            golden = (lambda: {"out": a + 1 + (1 if wrong else 0)})
            test_manager.execute(KernelArgs(
                kernel_func=add_rows, compiler_input=CompilerArgs(logical_nc_config=1),
                kernel_input={"a": a},
                validation_args=ValidationArgs(LazyGoldenGenerator(
                    {"out": np.zeros_like(a)}, golden), 1e-6, 1e-6)))

        class TestAdd:
            @pytest.mark.fast
            @pytest.mark.parametrize("rows", [256, 128, 8192])
            def test_add(self, test_manager, rows):
                run(test_manager, rows)

        class TestWrong:
            @pytest.mark.fast
            def test_wrong_reference(self, test_manager):
                run(test_manager, 128, wrong=True)
        ''',
    'src/nkilib_src/__init__.py': '',
    'src/nkilib_src/kernels.py': '''
        import nki
        import nki.isa as nisa
        import nki.language as nl

        @nki.jit
        def add_rows(a):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for k in range(a.shape[0] // 128):
                t = nl.ndarray((128, a.shape[1]), dtype=a.dtype, buffer=nl.sbuf)
                nisa.dma_copy(dst=t, src=a[k * 128:(k + 1) * 128, :])
                nisa.tensor_scalar(dst=t, data=t, op0=nl.add, operand0=1.0)
                nisa.dma_copy(dst=out[k * 128:(k + 1) * 128, :], src=t)
            return out
        ''',
}


def library(root):
    for path, text in FILES.items():
        full = os.path.join(root, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, 'w') as f:
            f.write(textwrap.dedent(text).lstrip())


def rows_of(path):
    with open(path) as f:
        return json.load(f)


def run(*args):
    env = dict(os.environ)
    for k in ('PYTHONPATH', 'TRNSIM_NKI_QUIET', 'TRNSIM_NKI_CONFIG'):
        env.pop(k, None)
    return subprocess.run([DRIVER, *args], capture_output=True, text=True, env=env)


class Driver(unittest.TestCase):

    def test_the_librarys_tests_on_trnsim(self):
        with tempfile.TemporaryDirectory() as tmp:
            library(tmp)
            out = os.path.join(tmp, 'r.json')
            r = run(tmp, '--quiet', '--json', out)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)  # (the wrong reference)
            rows = {row['test'].split('::')[-1]: row for row in rows_of(out)}
            self.assertEqual(rows['test_add[256]']['outcome'], 'passed')
            self.assertEqual(rows['test_add[256]']['lnc'], 1)
            self.assertGreater(float(rows['test_add[256]']['us']), 0)
            self.assertEqual(rows['test_add[8192]']['outcome'], 'skipped')
            self.assertEqual(rows['test_wrong_reference']['outcome'], 'failed')
            self.assertIn("values outside the library's tolerance: out",
                          rows['test_wrong_reference']['why'])
            self.assertIn('nki-library: 4 tests', r.stdout)
            # one case a test class: the smallest that runs (128 rows)
            r = run(tmp, '--quiet', '--smallest', '--json', out)
            self.assertEqual([row['test'].split('::')[-1] for row in rows_of(out)],
                             ['test_add[128]', 'test_wrong_reference'])
            # the large shapes too
            r = run(tmp, '--quiet', '--all-shapes', '-k', '8192', '--json', out)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertEqual(rows_of(out)[0]['outcome'], 'passed')

    def test_not_a_library(self):
        with tempfile.TemporaryDirectory() as tmp:
            r = run(tmp)
        self.assertEqual(r.returncode, 2)
        self.assertIn('is not a copy of aws-neuron/nki-library', r.stderr)


if __name__ == '__main__':
    unittest.main()
