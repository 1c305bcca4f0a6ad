"""The compiler flags a kernel is launched with (neuronx-cc's: the NEURON_CC_FLAGS environment
variable, read at each launch, then the `additional_compile_opt` of nki.jit, nki.baremetal,
nki.simulate or nki.benchmark) and what each sets in the model for that launch. An explicit
choice of the user (--config, --set, NEURON_PLATFORM_TARGET_OVERRIDE, NEURON_LOGICAL_NC_CONFIG)
wins over a flag; a flag wins over the config's value. Flags that set nothing are listed."""

import os
import shlex

from ._errors import KernelError

# --target: neuronx-cc's target -> trnsim's config (the compiler CLI reference)
TARGET_CONFIGS = {'trn1': 'trn1', 'trn1n': 'trn1', 'trn2': 'trn2', 'trn3': 'trn3'}


class CompileFlags:
    """What a launch's flags set: `hardware_dge` (None: the config's), `lnc` (None: the
    config's chip.lnc), `target` (a config name, None: the platform's), and the flags that set
    something (`applied`) or nothing (`ignored`, each with why)."""

    def __init__(self):
        self.hardware_dge = None
        self.lnc = None
        self.target = None
        self.applied = []
        self.ignored = []

    def native(self, native):
        """The bridge's CompileFlags of this launch."""
        f = native.CompileFlags()
        f.hardware_dge = -1 if self.hardware_dge is None else int(self.hardware_dge)
        f.applied = ' '.join(self.applied)
        f.ignored = ' '.join(self.ignored)
        return f


def _words(text, origin, site):
    try:
        return shlex.split(text)
    except ValueError as e:
        raise KernelError(origin, f'cannot read the compiler flags {text!r}: {e}', site) from None


def _option_sets(kernel):
    """The additional_compile_opt strings of a kernel and of the kernels it wraps."""
    found, seen = [], set()
    while kernel is not None and id(kernel) not in seen:
        seen.add(id(kernel))
        opt = (getattr(kernel, 'options', None) or {}).get('additional_compile_opt')
        if opt:
            found.append(opt)
        kernel = getattr(kernel, 'kernel', None)
    return list(reversed(found))  # the innermost (nki.jit's) first: the outer ones win


def read(kernel, explicit_keys, site):
    """The flags of a launch of `kernel`; `explicit_keys`: the config keys the user set with
    --set (their flags are ignored, said so)."""
    flags = CompileFlags()
    sources = [('NEURON_CC_FLAGS', os.environ.get('NEURON_CC_FLAGS', ''))]
    sources += [('additional_compile_opt', opt) for opt in _option_sets(kernel)]
    for origin, text in sources:
        if not isinstance(text, str):
            raise KernelError(origin, f'compiler flags are a string, not {type(text).__name__}',
                              site)
        words = _words(text, origin, site)
        i = 0
        while i < len(words):
            word = words[i]
            name, eq, value = word.partition('=')
            takes = name in ('--target', '--logical-nc-config', '-lnc')
            if takes and not eq:
                if i + 1 >= len(words):
                    raise KernelError(origin, f'{name} needs a value', site)
                value, i = words[i + 1], i + 1
                word = f'{name}={value}'
            i += 1
            _apply(flags, name, value, word, explicit_keys, origin, site)
    return flags


def _apply(flags, name, value, word, explicit_keys, origin, site):
    if name == '--disable-dge':
        if 'core.dma.hardware_dge' in explicit_keys:
            flags.ignored.append(f'{word} (--set core.dma.hardware_dge wins)')
        else:
            flags.hardware_dge = False
            flags.applied.append(word)
    elif name in ('--logical-nc-config', '-lnc'):
        if value not in ('1', '2'):
            raise KernelError(origin, f'{word}: a logical NeuronCore has 1 or 2 physical ones',
                              site)
        if os.environ.get('NEURON_LOGICAL_NC_CONFIG', '').strip():
            flags.ignored.append(f'{word} (NEURON_LOGICAL_NC_CONFIG wins)')
        elif 'chip.lnc' in explicit_keys:
            flags.ignored.append(f'{word} (--set chip.lnc wins)')
        else:
            flags.lnc = int(value)
            flags.applied.append(word)
    elif name == '--target':
        if value not in TARGET_CONFIGS:
            flags.ignored.append(f'{word} (not a platform trnsim models: '
                                 f'{", ".join(TARGET_CONFIGS)})')
        else:
            flags.target = TARGET_CONFIGS[value]
            flags.applied.append(word)
    else:
        flags.ignored.append(word)
