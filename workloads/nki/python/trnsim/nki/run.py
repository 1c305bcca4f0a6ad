"""Runs an NKI script as `python3 SCRIPT [ARGS...]` would (scripts/nki): an error in a kernel or
in the configuration ends the run with one line naming the kernel's file:line (or the config
key) and exit status 2, not a traceback; so does a call of an NKI API with arguments its
signature does not take (a KernelError too). Other exceptions are the script's own and print as
usual."""

import os
import runpy
import sys


def _watch_comparisons():
    """For scripts/nki-survey: the script's numpy comparisons (how harnesses check a kernel's
    values) are noted with their outcome."""
    import functools

    import numpy as np

    from trnsim.nki import _runner

    def watch(owner, name, asserts):
        fn = getattr(owner, name)

        @functools.wraps(fn)
        def noted(*args, **kwargs):
            try:
                result = fn(*args, **kwargs)
            except AssertionError:
                _runner.survey({'check': name, 'ok': False})
                raise
            ok = True if asserts else bool(result)
            _runner.survey({'check': name, 'ok': ok})
            return result
        setattr(owner, name, noted)

    for name in ('allclose', 'array_equal'):
        watch(np, name, False)
    for name in ('assert_allclose', 'assert_array_equal', 'assert_array_almost_equal',
                 'assert_almost_equal', 'assert_equal'):
        watch(np.testing, name, True)


def main():
    if len(sys.argv) < 2:
        print('usage: python3 -m trnsim.nki.run SCRIPT.py [ARGS...]', file=sys.stderr)
        return 2
    script = sys.argv[1]
    if not os.path.isfile(script):
        print(f'scripts/nki: error: no such script: {script}', file=sys.stderr)
        return 2
    from trnsim.nki import _registry
    version = os.environ.get('TRNSIM_NKI_VERSION', '')
    if version and version not in _registry.NKI0:
        print(f'scripts/nki: error: NKI version {version} (--nki-version, TRNSIM_NKI_VERSION) '
              f'is not one of {", ".join(_registry.NKI0)}', file=sys.stderr)
        return 2
    if os.environ.get('TRNSIM_NKI_SURVEY'):
        _watch_comparisons()
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    from trnsim.nki import _errors, _runner
    try:
        runpy.run_path(script, run_name='__main__')
    except (_errors.KernelError, _runner.native.UserError) as e:
        sys.stdout.flush()
        print(f'scripts/nki: error: {e}', file=sys.stderr)
        return 2
    except (TypeError, ImportError) as e:
        # (what the environment lacks: an API of the edition, JAX, a torch dtype)
        message = _torch_dtype_error(e) if isinstance(e, TypeError) else _import_error(e)
        if message is None:
            raise
        sys.stdout.flush()
        print(f'scripts/nki: error: {message}', file=sys.stderr)
        return 2
    return 0


def _import_error(e):
    """`from nki.isa import name` of a name the edition lacks: the one line an attribute of
    the namespace gives (not supported yet, not in this edition, no such API), at the import's
    line; None for any other ImportError."""
    import re

    from trnsim.nki import _errors, _namespaces, _registry
    if isinstance(e, ModuleNotFoundError) and (e.name or '').split('.')[0] == 'jax':
        # (Debian packages no JAX: the tutorials' JAX harnesses have numpy and torch twins)
        return (f'{_user_line(e)}: JAX is not installed (Debian has no JAX package): this JAX '
                'harness cannot run here; its numpy or torch twin runs the same kernels')
    module = sys.modules.get(e.name or '')
    found = re.match(r"cannot import name '(\w+)'", str(e))
    if not isinstance(module, _namespaces.Namespace) or found is None:
        return None
    _, why = _registry.lookup(module._namespace, found.group(1), module._edition)
    if why is None:
        return None
    return f'{_user_line(e)}: {why[0]}: {why[1]}'


def _torch_dtype_error(e):
    """torch.from_numpy of an array whose dtype this machine's torch has no tensors of (Debian
    12's torch 1.13 has no uint32, uint16 or fp8 ones: the MX tutorial's harness hands uint32
    arrays to its kernels): one line naming the harness's line and the reason; None for any
    other TypeError."""
    import re
    found = re.match(r"can't convert np\.ndarray of type numpy\.(\w+)", str(e))
    torch = sys.modules.get('torch')
    if found is None or torch is None:
        return None
    return (f'{_user_line(e)}: torch {torch.__version__} has no {found.group(1)} tensors '
            f'(uint32 came with torch 2.3; Debian 12 packages 1.13): this line of the harness '
            f'cannot run here')


def _user_line(e):
    """FILE:LINE of the script's innermost frame in an exception's traceback."""
    from trnsim.nki import _errors
    tb, where = e.__traceback__, ('<unknown>', 0)
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if not _errors.in_frontend(name) and not name.startswith('<'):
            where = (name, tb.tb_lineno)
        tb = tb.tb_next
    return f'{where[0]}:{where[1]}'


if __name__ == '__main__':
    sys.exit(main())
