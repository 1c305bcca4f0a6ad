#!/usr/bin/env python3
"""The include graph of models/, workloads/ and platforms/ is layered and has no circle.

Layers, each including only itself and those below it: core, isa, program, analysis; the blocks
(memory, interconnect, dma, engines) include those four and never a sibling; workloads include
models; platforms include everything. No two modules (a header and its .cpp) include each other,
directly or around a circle. docs/architecture.md's map names every folder of models/.
Usage: layers_test.py PROJECT_DIR
"""
import pathlib
import re
import sys

BASE = ["core", "isa", "program", "analysis"]
BLOCKS = ["memory", "interconnect", "dma", "engines"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def allowed(folder):
    """The top-level folders `folder` may include."""
    if folder in BASE:
        return set(BASE[: BASE.index(folder) + 1])
    if folder in BLOCKS:
        return set(BASE) | {folder}
    if folder == "workloads":
        return set(BASE) | set(BLOCKS) | {"workloads"}
    return None  # platforms: anything


def folder_of(root, path):
    rel = path.relative_to(root).parts
    return rel[1] if rel[0] == "models" else rel[0]


def main(root):
    root = pathlib.Path(root)
    sources = [p for d in ("models", "workloads", "platforms") for p in (root / d).rglob("*")
               if p.suffix in (".h", ".cpp")]
    errors = []
    graph = {}  # module ("program/program") -> modules it includes
    for path in sources:
        folder = folder_of(root, path)
        module = str(path.relative_to(root / "models" if path.parts[len(root.parts)] == "models"
                                      else root).with_suffix(""))
        ok = allowed(folder)
        for target in INCLUDE.findall(path.read_text()):
            top = target.split("/")[0]
            if ok is not None and top not in ok:
                errors.append(f"{path.relative_to(root)}: includes {target}, but {folder}/ "
                              f"includes only {', '.join(sorted(ok))}")
            dep = str(pathlib.PurePath(target).with_suffix(""))
            if dep != module:
                graph.setdefault(module, set()).add(dep)
    # circles among modules (depth-first search, each circle reported once)
    state, stack = {}, []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for d in sorted(graph.get(m, ())):
            if state.get(d) == 1:
                errors.append("include circle: " + " -> ".join(stack[stack.index(d):] + [d]))
            elif d not in state:
                visit(d)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)
    arch = (root / "docs" / "architecture.md").read_text()
    for d in sorted(p.name for p in (root / "models").iterdir() if p.is_dir()):
        if not re.search(rf"\b{d}/", arch.split("## Modules", 1)[1].split("```")[1]):
            errors.append(f"docs/architecture.md's map of modules does not name models/{d}/")
    for e in errors:
        print(e)
    print(f"{len(sources)} files, {sum(len(v) for v in graph.values())} includes: "
          f"{len(errors)} problems")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
