"""Errors in kernels, named with the kernel's file:line: the first frame outside the frontend."""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
# Frames in these folders are the frontend's (its package and the import aliases).
FRONTEND_DIRS = (_HERE + os.sep,
                 os.path.join(os.path.dirname(os.path.dirname(_HERE)), 'alias') + os.sep,
                 '<trnsim')  # the signatures the API registry generates


class KernelError(Exception):
    """An error in a kernel: names the API and the kernel's file:line."""

    def __init__(self, api, message, site=None):
        self.api = api
        self.site = site if site is not None else user_site()
        self.detail = message
        super().__init__(f'{self.site[0]}:{self.site[1]}: {api}: {message}')


def in_frontend(filename):
    return filename.startswith(FRONTEND_DIRS)


def user_frame():
    """The innermost frame outside the frontend: the kernel's own (None if there is none)."""
    f = sys._getframe(1)
    while f is not None and in_frontend(f.f_code.co_filename):
        f = f.f_back
    return f


def user_site():
    """(file, line) of the innermost frame outside the frontend: the kernel's own line."""
    f = user_frame()
    if f is None:
        return ('<unknown>', 0)
    return (f.f_code.co_filename, f.f_lineno)


def unsupported(api, what=None, site=None):
    """The error for an API or a use of it that the frontend does not support yet."""
    if what is None:
        what = 'not supported by trnsim yet'
    elif 'not supported' not in what:
        what += ' is not supported yet'
    return KernelError(api, what + ' (docs/nki.md lists what is supported)', site)


class UnsupportedAttribute(KernelError, AttributeError):
    """An attribute the frontend does not have: a kernel error (scripts/nki reports it in one
    line), and an AttributeError, so that hasattr() and getattr(x, name, default) still work."""


class UserFacing:
    """A frontend object a kernel holds: an attribute it lacks, asked for by the kernel, is a
    kernel error at the kernel's line rather than a traceback from inside the frontend (private
    names, and lookups by the frontend itself, stay plain misses)."""

    __slots__ = ()
    _kind = 'this object'  # what the error calls it

    def __getattr__(self, name):
        if name.startswith('_') or in_frontend(sys._getframe(1).f_code.co_filename):
            raise AttributeError(name)
        raise UnsupportedAttribute(f'.{name}', f'{self._kind} has no such attribute in trnsim '
                                   '(docs/nki.md lists what is supported)')
