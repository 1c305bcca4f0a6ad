"""scripts/nki --replay: a launch that `--builds-out` saved, built again from its recordings and
run under this process's config (TRNSIM_NKI_CONFIG, TRNSIM_NKI_SETS), its statistics written to
TRNSIM_NKI_STATS_OUT. It imports only the native module, not the frontend: a fit replays an NKI
point at each evaluation (scripts/calibrate), so its start-up is most of what a replay costs.

Exit status: 0 replayed; 2 a bad file or config; 3 not replayed (the builder answers a recording
otherwise under this config, the frontend would read other limits of it, or the launch would
differ otherwise: launch_inputs): run the script."""

import json
import os
import sys

import _trnsim as native


# The config keys a compiler flag sets unless --set gives them (trnsim/nki/_flags.py): which of
# them the user set decides what a launch's flags did.
FLAG_KEYS = ('core.dma.hardware_dge', 'chip.lnc')
# What else of the environment a launch depends on: the compiler flags and the LNC degree
# (NEURON_CC_FLAGS, NEURON_LOGICAL_NC_CONFIG), the target, the NKI edition and the frontend's
# switches.
_ENVIRONMENT = ('TRNSIM_NKI_VERSION', 'TRNSIM_NKI_UNROLL', 'TRNSIM_STRICT', 'TRNSIM_NKI_ALIASES')


def launch_inputs(sets):
    """What a launch's recording and flags depend on besides the config's values: the --config
    given (its text), which FLAG_KEYS `sets` give, and the environment the frontend reads."""
    given = {s.partition('=')[0].strip() for s in sets}
    return {'config_given': os.environ.get('TRNSIM_NKI_CONFIG', ''),
            'flag_keys_set': sorted(k for k in FLAG_KEYS if k in given),
            'environment': {k: v for k, v in sorted(os.environ.items())
                            if k.startswith(('NEURON_', 'NKI_')) or k in _ENVIRONMENT}}


def frontend_limits(platform):
    """The platform's limits the NKI frontend checks and records kernels against (its Python
    reads nothing else of the config but the chip's cores and LNC degree)."""
    p = platform
    return {'partitions': p.partitions(), 'pe_rows': p.integer('core.pe.rows'),
            'pe_cols': p.integer('core.pe.cols'),
            'moving_max': p.integer('core.pe.moving_max'),
            'psum_bank': p.size('core.psum.bank_size'),
            'psum_tile_banks': p.integer('core.psum.tile_banks'),
            'bf16_psum': p.boolean('core.pe.bf16_psum'),
            'mx': p.boolean('core.pe.mx'),
            'indirect': p.boolean('core.sbuf.indirect'),
            'sbuf_bytes': p.sbuf_partition_bytes(),
            'psum_bytes': p.psum_partition_bytes(),
            'isa_version': p.integer('core.isa_version'),
            'dma_priority_levels': p.integer('core.dma.priority_levels'),
            'double_row': p.boolean('core.pe.double_row'),
            'hoist_share': p.real('compiler.hoist_sbuf_share'),
            'hoist_loads': p.boolean('compiler.hoist_loads')}


def frontend_view(platform):
    """What a recording depends on of the config: the limits, the chip's cores and LNC."""
    return dict(frontend_limits(platform), cores=platform.cores(),
                lnc=platform.integer('chip.lnc'))


class Replanned(Exception):
    """The builder answers a recording otherwise under this config, or the frontend would read
    other values of it: the script must run again."""


def replay(saved, platform):
    """The stats (JSON text) of the saved launch (what --builds-out wrote, read), built from
    its recordings and run on `platform`: the script's own whenever the builder answers each
    recording as it did then and the frontend's view of the config is the same."""
    if 'not_replayable' in saved:
        raise Replanned(saved['not_replayable'])
    if frontend_view(platform) != saved['frontend']:
        raise Replanned('the frontend reads other values of this config (its limits)')
    program = None
    for step in saved['builds']:
        try:
            program = platform.build_recording(step['recording'])[0]
            answer = 'built'
        except native.UnrollRequest as e:
            answer = f'unroll {e.args[0]}'
        except (native.RecordingError, native.UserError, RuntimeError, ValueError) as e:
            answer = 'does not fit' if 'does not fit' in str(e) else f'error: {e}'
        if answer != step['answer']:
            raise Replanned(f"the builder answers {answer!r}, not {step['answer']!r}")
    platform.check(program)
    flags = native.CompileFlags()
    flags.hardware_dge = int(saved['flags']['hardware_dge'])  # (-1: the config's)
    flags.applied = str(saved['flags']['applied'])
    flags.ignored = str(saved['flags']['ignored'])
    return platform.run(program, saved['description'], '', '', flags)


def main(args):
    if len(args) != 1 or not os.path.isfile(args[0]):
        print(f'scripts/nki: error: --replay needs a file --builds-out wrote, not '
              f'{" ".join(args) or "nothing"}', file=sys.stderr)
        return 2
    path = args[0]
    try:
        with open(path) as f:
            saved = json.load(f)
        if not isinstance(saved, dict):
            raise ValueError('not an object')
        sets = [s for s in os.environ.get('TRNSIM_NKI_SETS', '').split('\n') if s]
        config = os.environ.get('TRNSIM_NKI_CONFIG', '') or saved.get('config', '')
        platform = native.Platform(config, sets, False, '--set')  # (a bad config: status 2)
        if 'not_replayable' not in saved:
            if config != saved['config']:
                raise Replanned(f"built for {saved['config']}, not {config}")
            if launch_inputs(sets) != saved['inputs']:
                raise Replanned('launched otherwise: another --config, compiler flags the '
                                '--set keys override, or environment (NEURON_*, NKI_*)')
        text = replay(saved, platform)
    except Replanned as e:
        print(f'scripts/nki: {path}: not replayed: {e}', file=sys.stderr)
        return 3
    except native.UserError as e:
        print(f'scripts/nki: error: {e}', file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError, AttributeError) as e:
        print(f'scripts/nki: error: {path}: not a file --builds-out wrote ({e})', file=sys.stderr)
        return 2
    out = os.environ.get('TRNSIM_NKI_STATS_OUT', '')
    if out:
        with open(out, 'w') as f:
            f.write(text + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
