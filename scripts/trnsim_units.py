"""Values with units, as sim reads them (models/core/units.cpp): each kind converted to one
unit (times to ns, frequencies to GHz, bandwidths to GB/s, sizes to bytes). Shared by
scripts/plot and scripts/roofline."""

import re

UNITS = {
    "ns": {"ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9},
    "GHz": {"Hz": 1e-9, "kHz": 1e-6, "MHz": 1e-3, "GHz": 1.0},
    "GB/s": {"B/ns": 1.0, "B/s": 1e-9, "KB/s": 1e-6, "MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3,
             "KiB/s": 1024 / 1e9, "MiB/s": 1024 ** 2 / 1e9, "GiB/s": 1024 ** 3 / 1e9,
             "TiB/s": 1024 ** 4 / 1e9},
    "B": {"B": 1.0, "KiB": 1024.0, "MiB": 1024.0 ** 2, "GiB": 1024.0 ** 3, "TiB": 1024.0 ** 4,
          "KB": 1e3, "MB": 1e6, "GB": 1e9},
}
NUMBER = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")


class UnitError(ValueError):
    """A value that is not a number with a known unit."""


def parse_value(text):
    """(value in its kind's unit, that unit, or '' for a plain number)."""
    m = NUMBER.match(str(text))
    if not m:
        raise UnitError(f"'{text}' is not a number")
    value, unit = float(m.group(1)), m.group(2)
    if not unit:
        return value, ""
    for kind, table in UNITS.items():
        if unit in table:
            return value * table[unit], kind
    raise UnitError(f"unknown unit '{unit}' in '{text}'")
