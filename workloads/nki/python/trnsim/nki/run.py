"""Runs an NKI script as `python3 SCRIPT [ARGS...]` would (scripts/nki): an error in a kernel or
in the configuration ends the run with one line naming the kernel's file:line (or the config
key) and exit status 2, not a traceback. So does a call of an NKI API with arguments its
signature does not take. Other exceptions are the script's own and print as usual."""

import os
import re
import runpy
import sys
import traceback

_SIGNATURE = re.compile(r'^(\w+)\(\) (missing|got|takes) ')


def api_call_error(e):
    """'FILE:LINE: nl.NAME: ...' when `e` is the TypeError of a call of an NKI API with arguments
    its signature does not take (raised at the caller's line), else None."""
    from trnsim.nki import isa, language
    m = _SIGNATURE.match(str(e))
    frames = traceback.extract_tb(e.__traceback__)
    if not m or not frames:
        return None
    for prefix, module in (('nl', language), ('nisa', isa)):
        if callable(getattr(module, m.group(1), None)) and m.group(1) in vars(module):
            site = frames[-1]
            detail = str(e)[len(m.group(1)) + 3:]
            return (f'{site.filename}:{site.lineno}: {prefix}.{m.group(1)}: {detail} '
                    '(docs/nki.md lists what is supported)')
    return None


def main():
    if len(sys.argv) < 2:
        print('usage: python3 -m trnsim.nki.run SCRIPT.py [ARGS...]', file=sys.stderr)
        return 2
    script = sys.argv[1]
    if not os.path.isfile(script):
        print(f'scripts/nki: error: no such script: {script}', file=sys.stderr)
        return 2
    sys.argv = sys.argv[1:]
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    from trnsim.nki import _core
    try:
        runpy.run_path(script, run_name='__main__')
    except (_core.KernelError, _core.native.UserError) as e:
        sys.stdout.flush()
        print(f'scripts/nki: error: {e}', file=sys.stderr)
        return 2
    except TypeError as e:
        message = api_call_error(e)
        if message is None:
            raise
        sys.stdout.flush()
        print(f'scripts/nki: error: {message}', file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
