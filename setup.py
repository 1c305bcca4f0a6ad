"""Builds the trnsim Python package: the NKI frontend (workloads/nki/python/trnsim), its import
aliases and their startup hook, the configs, and the C++ bridge (_trnsim, _trnsim_dtypes) from
the CMake build in BUILD_DIR (default build/): configured and built there if it is not yet,
else brought up to date (nothing compiled when it is). Run by pip (see pyproject.toml)."""

import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

ROOT = os.path.dirname(os.path.abspath(__file__))
PYTHON = os.path.join(ROOT, 'workloads', 'nki', 'python')


class BuildWithCMake(build_py):
    """build_py, plus the bridge's modules from the CMake build, the configs and the .pth."""

    def run(self):
        super().run()
        build = os.path.abspath(os.environ.get('BUILD_DIR') or os.path.join(ROOT, 'build'))
        if not os.path.isfile(os.path.join(build, 'CMakeCache.txt')):
            subprocess.check_call(['cmake', '-S', ROOT, '-B', build,
                                   '-DCMAKE_BUILD_TYPE=' +
                                   os.environ.get('BUILD_TYPE', 'Release')])
        subprocess.check_call(['cmake', '--build', build, '--target', '_trnsim', '_trnsim_dtypes',
                               '-j', str(os.cpu_count() or 2)])
        modules = glob.glob(os.path.join(build, 'python', '_trnsim*.so'))
        if len(modules) < 2:
            raise RuntimeError(f'{build}/python lacks _trnsim or _trnsim_dtypes after the build')
        for so in modules:
            shutil.copy2(so, self.build_lib)
        configs = os.path.join(self.build_lib, 'trnsim', 'configs')
        os.makedirs(configs, exist_ok=True)
        for yaml in glob.glob(os.path.join(ROOT, 'configs', '*.yaml')):
            shutil.copy2(yaml, configs)
        shutil.copy2(os.path.join(PYTHON, 'trnsim_aliases.pth'), self.build_lib)


class BinaryDistribution(Distribution):
    """The package holds compiled modules (a wheel for this Python and machine)."""

    def has_ext_modules(self):
        return True


setup(
    name='trnsim',
    version='0.1',
    description='A performance model of the AWS Trainium NeuronCore: NKI kernels on it',
    python_requires='>=3.9',
    package_dir={'': 'workloads/nki/python'},
    packages=['trnsim', 'trnsim.nki'],
    package_data={'trnsim': ['_alias_packages/*/*.py', '_alias_packages/*/*/*.py']},
    cmdclass={'build_py': BuildWithCMake},
    distclass=BinaryDistribution,
    options={'build': {'build_base': os.path.join(
        os.path.relpath(os.environ.get('BUILD_DIR') or os.path.join(ROOT, 'build'), ROOT),
        'python-package')},
             'egg_info': {'egg_base': os.path.relpath(
                 os.environ.get('BUILD_DIR') or os.path.join(ROOT, 'build'), ROOT)}},
    zip_safe=False,
)
