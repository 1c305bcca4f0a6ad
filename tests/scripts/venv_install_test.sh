#!/usr/bin/env bash
# A kernel writer's own Python: trnsim installs into a fresh virtual environment on Debian's
# Python (--system-site-packages, pip --no-build-isolation, offline; and a venv of its own) from
# this build without compiling it again; a pytest suite of the writer's kernels and a plain script run through it;
# the aliases neuronxcc.nki / nki are opt-in (install_aliases() or TRNSIM_NKI_ALIASES=1) and
# refused over a real Neuron SDK.
source "$(dirname "$0")/common.sh"
venv="$TMP/venv"
/usr/bin/python3 -m venv --system-site-packages "$venv" || { fail "venv"; finish; }
modules=("$BUILD_DIR"/python/_trnsim*.so)
before="$(stat -c %Y "${modules[@]}")"
(cd "$TMP" && "$venv/bin/pip" install --no-build-isolation --no-index --quiet "$ROOT") \
    >"$TMP/pip" 2>&1
expect_status 0 $? "pip install"
[ "$(stat -c %Y "${modules[@]}")" = "$before" ] || fail "the install compiled the bridge again"
grep -q "Building CXX" "$TMP/pip" && fail "the install compiled C++"

# A kernel project of the writer's own, tested with pytest.
mkdir -p "$TMP/proj/tests"
cat >"$TMP/proj/tests/conftest.py" <<'PY'
import trnsim.nki

trnsim.nki.install_aliases()
PY
cat >"$TMP/proj/tests/test_add.py" <<'PY'
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


def inputs():
    rng = np.random.default_rng(1)
    return rng.random((128, 512), dtype=np.float32), rng.random((128, 512), dtype=np.float32)


def test_values():
    a, b = inputs()
    assert np.allclose(add(a, b), a + b)


def test_latency():
    bench = nki.benchmark(warmup=1, iters=2)(add)
    bench(*inputs())
    assert 1 < bench.benchmark_result.nc_latency.get_latency_percentile(50) < 1000
PY
(cd "$TMP/proj" && TRNSIM_NKI_QUIET=1 "$venv/bin/python" -m pytest -q tests) >"$TMP/pytest" 2>&1
expect_status 0 $? "pytest through the installed trnsim"
expect_grep "2 passed" "$TMP/pytest" "the writer's tests pass"

# A plain script: the aliases by the environment only.
cp "$TMP/proj/tests/test_add.py" "$TMP/kernel.py"
printf 'test_values()\ntest_latency()\nprint("ran")\n' >>"$TMP/kernel.py"
(cd "$TMP" && TRNSIM_NKI_ALIASES=1 TRNSIM_NKI_QUIET=1 "$venv/bin/python" kernel.py) \
    >"$TMP/out" 2>&1
expect_status 0 $? "python kernel.py with TRNSIM_NKI_ALIASES=1"
expect_grep "^ran$" "$TMP/out" "the script ran"
(cd "$TMP" && "$venv/bin/python" kernel.py) >"$TMP/out" 2>&1
expect_status 1 $? "without the aliases, neuronxcc is not trnsim's"
expect_grep "No module named 'neuronxcc'" "$TMP/out" "aliases are opt-in"

# A real SDK on the path (a stand-in package): never shadowed.
mkdir -p "$TMP/sdk/neuronxcc"
echo 'REAL = True' >"$TMP/sdk/neuronxcc/__init__.py"
(cd "$TMP" && PYTHONPATH="$TMP/sdk" TRNSIM_NKI_ALIASES=1 "$venv/bin/python" -c \
    'import neuronxcc; print("real" if neuronxcc.REAL else "alias")') >"$TMP/out" 2>"$TMP/err"
expect_grep "^real$" "$TMP/out" "the real SDK wins"
expect_grep "a real Neuron SDK provides neuronxcc \($TMP/sdk/neuronxcc/__init__.py\)" \
    "$TMP/err" "and the user is told"
(cd "$TMP" && PYTHONPATH="$TMP/sdk" "$venv/bin/python" -c \
    'import trnsim.nki; trnsim.nki.install_aliases()') >"$TMP/out" 2>&1
expect_status 1 $? "install_aliases over a real SDK"
expect_grep "RuntimeError: trnsim: not installing the import aliases" "$TMP/out" "it raises"

# A venv of its own (no system site packages: setuptools and wheel as a plain venv has them,
# or not) installs too, offline, with pip's build isolation (the backend is the standard
# library's); its one dependency, numpy, is named when it cannot be had.
bare="$TMP/bare"
/usr/bin/python3 -m venv "$bare" || { fail "bare venv"; finish; }
(cd "$TMP" && "$bare/bin/pip" install --no-index "$ROOT") >"$TMP/pip2" 2>&1
expect_status 1 $? "pip install offline without numpy"
expect_grep "No matching distribution found for numpy" "$TMP/pip2" "numpy is named"
(cd "$TMP" && "$bare/bin/pip" install --no-index --no-deps "$ROOT") >"$TMP/pip2" 2>&1
expect_status 0 $? "pip install in a venv of its own"
grep -q "bdist_wheel" "$TMP/pip2" && fail "the build needed wheel"
(cd "$TMP" && TRNSIM_NKI_QUIET=1 "$bare/bin/python" -c \
    'import sys; sys.path.append("/usr/lib/python3/dist-packages")  # (numpy)
import numpy as np, trnsim.nki as nki, trnsim.nki.language as nl
@nki.jit
def k(a):
    o = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nl.store(o, value=nl.load(a))
    return o
a = np.ones((128, 64), np.float32)
print("copied" if (k(a) == a).all() else "wrong")') >"$TMP/out" 2>&1
expect_grep "^copied$" "$TMP/out" "a kernel runs in it"
finish
