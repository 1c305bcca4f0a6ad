"""The goldens travel: no golden holds a path of the machine that made it (an absolute path in
any text) nor where each configuration value came from (config_origin, never compared), and no
file under tests/ names the folder this checkout lies in."""

import glob
import json
import os
import re
import sys
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), '..', '..'))
ABSOLUTE = re.compile(r'(^|[\s(\'"=])(/[A-Za-z0-9_.-]+/|[A-Za-z]:\\)')


def texts(node, path=''):
    """(key, text) of every text value in a JSON tree."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from texts(v, f'{path}.{k}' if path else k)
    elif isinstance(node, str):
        yield path, node


class GoldensTest(unittest.TestCase):
    def goldens(self):
        files = sorted(glob.glob(os.path.join(ROOT, 'tests', 'regression', 'golden', '*.json')))
        self.assertGreater(len(files), 10, 'the goldens were not found')
        return files

    def test_no_absolute_path_in_a_golden(self):
        for path in self.goldens():
            with open(path, encoding='utf-8') as f:
                stats = json.load(f)
            for key, text in texts(stats):
                with self.subTest(golden=os.path.basename(path), key=key):
                    self.assertIsNone(ABSOLUTE.search(text), f'an absolute path: {text!r}')

    def test_no_config_origin_in_a_golden(self):
        for path in self.goldens():
            with open(path, encoding='utf-8') as f:
                self.assertNotIn('config_origin', json.load(f), os.path.basename(path))

    def test_the_checker_sees_paths(self):
        self.assertIsNotNone(ABSOLUTE.search('/home/me/configs/trn2.yaml:8'))
        self.assertIsNotNone(ABSOLUTE.search('from /work/x/k.py:3'))
        self.assertIsNone(ABSOLUTE.search('workloads/nki/kernels/matmul.py:147'))
        self.assertIsNone(ABSOLUTE.search('trn2.yaml:8'))
        self.assertIsNone(ABSOLUTE.search('dve+act'))

    def test_no_file_under_tests_names_this_checkout(self):
        here = ROOT.encode()
        for folder, _, names in os.walk(os.path.join(ROOT, 'tests')):
            for name in names:
                path = os.path.join(folder, name)
                with open(path, 'rb') as f:
                    with self.subTest(file=os.path.relpath(path, ROOT)):
                        self.assertNotIn(here, f.read())


if __name__ == '__main__':
    unittest.main()
