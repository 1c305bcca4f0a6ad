"""The PEP 517 build backend of trnsim's Python package, on the standard library alone: pip
builds the package offline in a virtual environment of any CPython of the bridge's version,
with or without setuptools and wheel (docs/nki.md, "Your own Python"). It builds the C++
bridge (_trnsim, _trnsim_dtypes) with CMake in BUILD_DIR (default build/), configuring it
there if there is none, else only bringing it up to date, and zips the wheel itself: the
frontend (workloads/nki/python/trnsim), the import aliases' startup hook, the configs and the
bridge."""

import base64
import glob
import hashlib
import os
import subprocess
import sys
import sysconfig
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYTHON = os.path.join(ROOT, 'workloads', 'nki', 'python')
NAME, VERSION = 'trnsim', '0.1'
METADATA = (f'Metadata-Version: 2.1\nName: {NAME}\nVersion: {VERSION}\n'
            'Summary: A performance model of the AWS Trainium NeuronCore: NKI kernels on it\n'
            'Requires-Python: >=3.9\nRequires-Dist: numpy\n')


def _tag():
    """The wheel's tag: this CPython and machine (the bridge is compiled for them)."""
    version = f'cp{sys.version_info.major}{sys.version_info.minor}'
    machine = sysconfig.get_platform().replace('-', '_').replace('.', '_')
    return f'{version}-{version}-{machine}'


def _bridge():
    """The bridge's modules from the CMake build, built or brought up to date; an error naming
    what is wrong when they are not for this Python."""
    build = os.path.abspath(os.environ.get('BUILD_DIR') or os.path.join(ROOT, 'build'))
    if not os.path.isfile(os.path.join(build, 'CMakeCache.txt')):
        subprocess.check_call(['cmake', '-S', ROOT, '-B', build,
                               '-DCMAKE_BUILD_TYPE=' + os.environ.get('BUILD_TYPE', 'Release')])
    subprocess.check_call(['cmake', '--build', build, '--target', '_trnsim', '_trnsim_dtypes',
                           '-j', str(os.cpu_count() or 2)], stdout=sys.stderr)
    suffix = sysconfig.get_config_var('EXT_SUFFIX')
    modules = sorted(glob.glob(os.path.join(build, 'python', '_trnsim*.so')))
    mine = [m for m in modules if m.endswith(suffix)]
    if len(mine) < 2:
        raise RuntimeError(
            f'trnsim: the bridge in {build}/python is built for another Python '
            f'({", ".join(os.path.basename(m) for m in modules) or "none"}); this pip runs '
            f'{sys.executable} ({suffix}): use a CPython of the bridge\'s version, or build '
            'the bridge for this one (BUILD_DIR=... with cmake -DPython_EXECUTABLE=...)')
    return mine


def _files():
    """(name in the wheel, path) of every file the package holds."""
    out = []
    for path in sorted(glob.glob(os.path.join(PYTHON, 'trnsim', '**', '*.py'), recursive=True)):
        out.append((os.path.relpath(path, PYTHON), path))
    out.append(('trnsim_aliases.pth', os.path.join(PYTHON, 'trnsim_aliases.pth')))
    for path in sorted(glob.glob(os.path.join(ROOT, 'configs', '*.yaml'))):
        out.append(('trnsim/configs/' + os.path.basename(path), path))
    for path in _bridge():
        out.append((os.path.basename(path), path))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()
    return f'{name},sha256={digest},{len(data)}'


def _dist_info():
    return f'{NAME}-{VERSION}.dist-info'


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, 'METADATA'), 'w') as f:
        f.write(METADATA)
    return _dist_info()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    tag = _tag()
    wheel_name = f'{NAME}-{VERSION}-{tag}.whl'
    info = _dist_info()
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), 'w',
                         zipfile.ZIP_DEFLATED) as whl:
        def add(name, data):
            whl.writestr(name, data)
            records.append(_record_line(name, data))

        for name, path in _files():
            with open(path, 'rb') as f:
                add(name, f.read())
        add(f'{info}/METADATA', METADATA.encode())
        add(f'{info}/WHEEL', (f'Wheel-Version: 1.0\nGenerator: {NAME} ({__name__})\n'
                              f'Root-Is-Purelib: false\nTag: {tag}\n').encode())
        records.append(f'{info}/RECORD,,')
        whl.writestr(f'{info}/RECORD', '\n'.join(records) + '\n')
    return wheel_name
