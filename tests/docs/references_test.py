"""The repository stands alone: every path the docs and configs name exists in it, every
"hardware-facts SECTION" citation names a section of docs/hardware-facts.md, and nothing
points outside the repository (such as ../shared)."""

import glob
import os
import re
import sys
import unittest

ROOT = sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', '..')
TOP = ('docs/', 'configs/', 'scripts/', 'workloads/', 'models/', 'platforms/', 'tests/',
       'calibration/', 'results/')


def read(path):
    with open(path, errors='replace') as f:
        return f.read()


def sources():
    """The files a user reads: the docs, the README and the configs."""
    return ([os.path.join(ROOT, 'README.md')] + glob.glob(os.path.join(ROOT, 'docs', '*.md')) +
            glob.glob(os.path.join(ROOT, 'configs', '*.yaml')))


def mentioned_paths(text):
    """Repository paths in a text: markdown link targets and path-like words."""
    out = set()
    for target in re.findall(r'\]\(([^)#\s]+)', text):
        if not re.match(r'[a-z]+://', target):
            out.add(target)
    for word in re.findall(r'[A-Za-z0-9_./-]+', text):
        if word.startswith(TOP) and not any(c in word for c in '*{<'):
            out.add(word.rstrip('.,:;'))
    return out


class References(unittest.TestCase):

    def test_every_mentioned_path_exists(self):
        missing = []
        for src in sources():
            text = read(src)
            for p in mentioned_paths(text):
                base = os.path.dirname(src) if p.startswith('.') else ROOT
                path = os.path.normpath(os.path.join(base, p))
                # A module may be named by its stem (models/core/params: .h and .cpp).
                if not os.path.exists(path) and not glob.glob(path + '.*'):
                    missing.append(f'{os.path.relpath(src, ROOT)}: {p}')
        self.assertEqual(missing, [], 'paths that do not exist in the repository')

    def test_nothing_points_outside_the_repository(self):
        for src in sources() + glob.glob(os.path.join(ROOT, 'models', '**', '*.*'),
                                         recursive=True):
            self.assertNotIn('../shared', read(src), src)
            self.assertNotIn('trainium-facts', read(src), src)

    def test_hardware_facts_citations_name_a_section(self):
        facts = read(os.path.join(ROOT, 'docs', 'hardware-facts.md'))
        sections = set(re.findall(r'^#+ (\d+[a-z]?)\. ', facts, re.M))
        numbered = set(f'3.{n}' for n in re.findall(r'^(\d+)\. ', facts.split('## 3.')[1],
                                                       re.M))
        files = sources() + glob.glob(os.path.join(ROOT, 'models', '**', '*.cpp'),
                                      recursive=True)
        bad = []
        for src in files:
            for cite in re.findall(r'hardware-facts (\d+[a-z]?(?:\.\d+)?)', read(src)):
                if cite not in sections | numbered:
                    bad.append(f'{os.path.relpath(src, ROOT)}: hardware-facts {cite}')
        self.assertEqual(bad, [])
        self.assertGreater(len(sections), 5)


if __name__ == '__main__':
    unittest.main()
