"""Where a kernel's time went, line by line: its source with each line's figures beside it
(scripts/nki --annotate), from the lines.* statistics of a run."""
import linecache
import os

# A gutter column per figure: (header, width, formatter of a line's statistics).
_COLUMNS = (
    ('save%', 6, lambda v: f"{v.get('saving_pct', 0):5.1f}%"),
    ('path%', 6, lambda v: f"{v['critical_path_pct']:5.1f}%"),
    ('bound', 17, lambda v: v.get('bound', '')[:17]),
    ('instr', 7, lambda v: _count(v['instructions'])),
    ('busy', 9, lambda v: _time(v['busy_ns'])),
    ('DMA', 8, lambda v: _bytes(v['dma_bytes'])),
    ('wait', 13, lambda v: _wait(v)),
)


def _wait(v):
    """The longest of a line's engines' semaphore waits, and the engine (never past the
    kernel time, as their sum can be)."""
    ns = v.get('wait_most_ns', v.get('wait_ns', 0))
    return '-' if ns <= 0 else f"{_time(ns)} {v.get('wait_most_engine', '')}".strip()


def _count(n):
    return f'{n:.0f}' if n < 1e5 else f'{n / 1e6:.2f}M' if n >= 1e6 else f'{n / 1e3:.0f}k'


def _time(ns):
    if ns <= 0:
        return '-'
    for unit, f in (('ms', 1e6), ('us', 1e3)):
        if ns >= f:
            return f'{ns / f:.3g}{unit}'
    return f'{ns:.3g}ns'


def _bytes(b):
    if b <= 0:
        return '-'
    for unit, f in (('GB', 1e9), ('MB', 1e6), ('kB', 1e3)):
        if b >= f:
            return f'{b / f:.3g}{unit}'
    return f'{b:.0f}B'


def lines_of(stats):
    """[(place, figures)] of a run's lines.* statistics, the place "FILE:LINE" (or a driver's
    step, or "(none)": the launch and what has no line)."""
    table = stats.get('lines') or {}
    return [(v['place'], v) for k, v in table.items() if isinstance(v, dict) and 'place' in v]


def _split(place):
    """(file, line) of a "FILE:LINE" place, or None; the file as short as it can be said (from
    the current folder when it is inside it)."""
    path, _, line = place.rpartition(':')
    if not (path and line.isdigit()):
        return None
    path = os.path.normpath(path)
    if os.path.isabs(path) and path.startswith(os.getcwd() + os.sep):
        path = os.path.relpath(path)
    return path, int(line)


def annotate(stats, out, hottest=5, context=2):
    """Prints each source file of the kernel with the figures of its lines in a gutter, then the
    hottest lines and what bounds each. Returns the number of lines with figures."""
    rows = lines_of(stats)
    total = stats.get('total_time_ns', 0)

    by_file = {}
    for place, v in rows:
        where = _split(place)
        if where:
            by_file.setdefault(where[0], {})[where[1]] = v
    gutter = ' '.join(f'{h:>{w}}' for h, w, _ in _COLUMNS)
    print(f'where the time goes, line by line (kernel time {_time(total)}): save% is the kernel '
          'time that would save were the line\'s work free, at most (as "bound by" says for '
          'resources); path% its share of the critical path (the shares add up to 100%); a line '
          'in a loop sums all its iterations', file=out)
    slowest = (stats.get('chip') or {}).get('slowest_core')
    if slowest is not None:
        print(f'(core {slowest:.0f}\'s lines, the core that ended last; every core\'s are in the '
              'statistics, cores.cN.lines)', file=out)
    for path, figures in by_file.items():
        first, last = min(figures) - context, max(figures) + context
        print(f'\n{gutter}  {path}', file=out)
        shown = os.path.isfile(path)
        for n in range(max(first, 1), last + 1):
            text = linecache.getline(path, n).rstrip('\n') if shown else ''
            if n > max(figures) and not text and not shown:
                break
            v = figures.get(n)
            cells = (' '.join(f'{f(v):>{w}}' for _, w, f in _COLUMNS) if v else
                     ' ' * len(gutter))
            print(f'{cells}  {n:5d}  {text}', file=out)
    other = [(p, v) for p, v in rows if not _split(p)]
    for place, v in other:
        cells = ' '.join(f'{f(v):>{w}}' for _, w, f in _COLUMNS)
        print(f'{cells}  {place}', file=out)
    ranked = sorted(rows, key=lambda r: (-r[1].get('saving_pct', 0),
                                         -r[1]['critical_path_pct']))[:hottest]
    print('\nhottest lines (save%: the kernel time their work costs, at most; path%: their share '
          'of the critical path; what holds them):', file=out)
    for place, v in ranked:
        where = _split(place)
        text = linecache.getline(*where).strip() if where else ''
        engines = v.get('engines', {})
        busiest = max(engines.items(), key=lambda e: e[1]['busy_ns'], default=None)
        extra = []
        if busiest:
            extra.append(f"{busiest[0]} busy {_time(busiest[1]['busy_ns'])} over "
                         f"{_count(busiest[1]['instructions'])} instructions")
        if v['dma_transfers']:
            extra.append(f"{_count(v['dma_transfers'])} DMA transfers, {_bytes(v['dma_bytes'])}")
        shown = f'{where[0]}:{where[1]}' if where else place
        print(f"  {v.get('saving_pct', 0):5.1f}%  {v['critical_path_pct']:5.1f}%  {shown}  "
              f"{text[:60]}", file=out)
        print(f"                 bound by {v.get('bound', '-')}" +
              (f"; {'; '.join(extra)}" if extra else ''), file=out)
    return len(rows)
