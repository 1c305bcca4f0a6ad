"""Values with units, as sim reads them (models/core/units.cpp): each kind converted to one
unit (times to ns, frequencies to GHz, bandwidths to GB/s, sizes to bytes). Shared by
scripts/plot, scripts/roofline and scripts/calibrate."""

import re

# Factor to each kind's base unit, exactly the units sim accepts (models/core/units.cpp).
UNITS = {
    "time": {"ps": 1e-3, "ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9},
    "frequency": {"Hz": 1e-9, "kHz": 1e-6, "MHz": 1e-3, "GHz": 1.0},
    "bandwidth": {"B/ns": 1.0, "MB/s": 1e-3, "GB/s": 1.0, "TB/s": 1e3,
                  "MiB/s": 1048576e-9, "GiB/s": 1073741824e-9, "TiB/s": 1099511627776e-9},
    "size": {"B": 1.0, "KiB": 1024.0, "MiB": 1048576.0, "GiB": 1073741824.0,
             "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9},
}
# The base unit of each kind, as axes and tables name it.
BASE = {"time": "ns", "frequency": "GHz", "bandwidth": "GB/s", "size": "B"}
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
            return value * table[unit], BASE[kind]
    raise UnitError(f"unknown unit '{unit}' in '{text}'")
