"""The frontend's layers (docs/architecture.md): each module of trnsim.nki imports only modules
of its own floor or below, and no import circle: dtypes and errors -> index expressions ->
tensors and tiles -> instructions -> the recording -> values -> operations and API
declarations -> namespaces per edition -> runner -> the package."""

import ast
import os
import unittest

import trnsim.nki

PACKAGE = os.path.dirname(trnsim.nki.__file__)

FLOORS = {
    '_dtypes': 0, '_errors': 0, '_reference': 0, '_annotate': 0, '_flags': 1,
    '_index': 1,
    '_tensors': 2,
    '_prims': 3,
    '_trace': 4,
    '_interpret': 5,
    '_registry': 6, '_ops': 6,
    '_api_language': 7, '_api_isa': 7, '_api_compiler': 7, '_api_typing': 7,
    '_namespaces': 8,
    '_runner': 9,
    'run': 10, '__init__': 10,
}


def imports_of(module):
    """The package's modules `module` imports (at any place in it)."""
    with open(os.path.join(PACKAGE, module + '.py')) as f:
        return imports_in(f.read(), module)


def imports_in(source, module):
    tree = ast.parse(source)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:  # from . import x / from ._x import y
                if node.module:
                    out.add(node.module.split('.')[0])
                else:
                    out.update(a.name for a in node.names)
            elif node.module and node.module.startswith('trnsim.nki'):
                rest = node.module[len('trnsim.nki'):].lstrip('.')
                if rest:
                    out.add(rest.split('.')[0])
                else:
                    out.update(a.name for a in node.names if a.name in FLOORS)
                    out.add('__init__')
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith('trnsim.nki.'):
                    out.add(a.name.split('.')[2])
    return out - {module}


class Layers(unittest.TestCase):

    def test_every_module_has_a_floor(self):
        modules = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith('.py')}
        self.assertEqual(modules, set(FLOORS))

    def test_imports_run_downward(self):
        upward = []
        for module, floor in FLOORS.items():
            for used in imports_of(module):
                if FLOORS.get(used, 99) > floor:
                    upward.append(f'{module} (floor {floor}) imports {used} '
                                  f'(floor {FLOORS.get(used)})')
        self.assertEqual(upward, [])

    def test_no_import_circle(self):
        graph = {m: imports_of(m) & set(FLOORS) for m in FLOORS}
        state = {}

        def visit(m, path):
            if state.get(m) == 'done':
                return
            self.assertNotEqual(state.get(m), 'open', ' -> '.join(path + [m]))
            state[m] = 'open'
            for n in sorted(graph[m]):
                visit(n, path + [m])
            state[m] = 'done'

        for m in FLOORS:
            visit(m, [])

    def test_the_detector_sees_each_spelling(self):
        source = ('import numpy\nfrom . import _runner\nfrom ._trace import Trace\n'
                  'def f():\n    from trnsim.nki._ops import emit_into\n'
                  '    import trnsim.nki._registry\n')
        self.assertEqual(imports_in(source, '_index'), {'_runner', '_trace', '_ops', '_registry'})


if __name__ == '__main__':
    unittest.main()
