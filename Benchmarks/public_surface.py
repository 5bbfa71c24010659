#!/usr/bin/env python3
"""Counts the public declarations `import Typeset` (or another module) exposes.

    python3 Benchmarks/public_surface.py [--module Typeset] [--build .build/release] [--max N] [--json]

What is counted, from the symbol graphs `swift symbolgraph-extract` writes for the built module
(its written declarations, not the members the compiler synthesizes):

  * every public or open declaration of the module itself, its extensions of other modules'
    types included (`extension String: Generable` counts its members);
  * every public declaration of each module it re-exports (`@_exported import X`), since a file
    that imports it sees them all;
  * for each public typealias of a type declared in a module it does not re-export, that type's
    public members (the alias exposes them).

Needs a release build (`swift build -c release`); prints the counts per source, and with --max,
exits 1 when the total is above it.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = {"public", "open"}


def target_triple() -> str:
    out = subprocess.run(["swift", "-print-target-info"], capture_output=True, text=True, check=True).stdout
    return json.loads(out)["target"]["triple"]


def extract(module: str, build: Path, directory: Path) -> list[dict]:
    """The symbol graphs of `module` (its own, and its extensions of other modules' types)."""
    out = directory / module
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([
        "swift", "symbolgraph-extract", "-module-name", module, "-target", target_triple(),
        "-I", str(build / "Modules"), "-I", str(ROOT / "Sources" / "COpenBLAS"),
        "-minimum-access-level", "public", "-skip-synthesized-members", "-output-dir", str(out),
    ], check=True, capture_output=True)
    return [json.loads(path.read_text()) for path in sorted(out.glob("*.symbols.json"))]


# The layers below Typeset (under their names before and after the grammar and tokenizer modules
# took the Typeset prefix, so that older builds can be counted too).
LAYERS = ["GGUF", "Kernels", "Models", "Tokenizer", "TypesetTokenizer", "Grammar", "TypesetGrammar", "ChatTemplating", "Typeset"]


def reexports(module: str, sources: Path) -> tuple[list[str], list[tuple[str, str]]]:
    """What `module`'s sources re-export: whole modules (`@_exported import X`) and single
    declarations (`@_exported import struct X.Y`), Foundation's aside (not Typeset's API)."""
    modules, declarations = set(), set()
    for path in (sources / module).rglob("*.swift"):
        text = path.read_text()
        for match in re.finditer(r"^@_exported import (\w+)\s*$", text, re.M):
            modules.add(match.group(1))
        for match in re.finditer(r"^@_exported import (?:struct|enum|class|protocol|typealias|func|let|var) (\w+)\.(\w+)\s*$", text, re.M):
            declarations.add((match.group(1), match.group(2)))
    return sorted(modules - {"Foundation"}), sorted(d for d in declarations if d[0] != "Foundation")


def public_symbols(graphs: list[dict]) -> list[dict]:
    return [s for g in graphs for s in g["symbols"] if s.get("accessLevel") in PUBLIC]


def members(graphs: list[dict], roots: set[str]) -> set[str]:
    """The public members of the symbols `roots` (nested types' members too), with the roots."""
    symbols = {s["identifier"]["precise"] for s in public_symbols(graphs)}
    children = defaultdict(list)
    for graph in graphs:
        for relation in graph.get("relationships", []):
            if relation["kind"] in ("memberOf", "optionalRequirementOf", "requirementOf") and relation["source"] in symbols:
                children[relation["target"]].append(relation["source"])
    seen, stack = set(), [r for r in roots if r in symbols]
    seen.update(stack)
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--module", default="Typeset")
    parser.add_argument("--build", default=str(ROOT / ".build" / "release"))
    parser.add_argument("--max", type=int)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    build = Path(args.build)
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        graphs = {}
        for name in LAYERS + [args.module]:
            if name not in graphs and (build / "Modules" / f"{name}.swiftmodule").exists():
                graphs[name] = extract(name, build, directory)
        own = public_symbols(graphs[args.module])
        counts = {args.module: len(own)}
        exposed = {s["identifier"]["precise"] for s in own}
        # The sources of the build counted (`<checkout>/.build/release` → `<checkout>/Sources`).
        whole, declarations = reexports(args.module, build.absolute().parents[1] / "Sources")
        for name in whole:
            symbols = public_symbols(graphs.get(name) or extract(name, build, directory))
            counts[f"{name} (re-exported whole)"] = len(symbols)
            exposed |= {s["identifier"]["precise"] for s in symbols}
        by_name = defaultdict(set)
        for name, declaration in declarations:
            for symbol in public_symbols(graphs[name]):
                if symbol["pathComponents"] == [declaration]:
                    by_name[name].add(symbol["identifier"]["precise"])
        # Types named by the module's public typealiases, from the modules they come from.
        aliased = set()
        for symbol in own:
            if symbol["kind"]["identifier"] == "swift.typealias":
                # The aliased type is the declaration's last type (`= Outer.Inner` names Inner).
                named = [f["preciseIdentifier"] for f in symbol.get("declarationFragments", [])
                         if f.get("kind") == "typeIdentifier" and f.get("preciseIdentifier")]
                if named:
                    aliased.add(named[-1])
        for name, module_graphs in graphs.items():
            if name == args.module or name in whole:
                continue
            roots = by_name.get(name, set()) | aliased
            found = members(module_graphs, roots) - exposed
            if found:
                counts[f"{name} (types re-exported or aliased, with their members)"] = len(found)
                exposed |= found
        total = sum(counts.values())
        # Types of the layers below that exposed declarations mention without exposing them:
        # reachable (a property's value, an error's payload) but not nameable.
        origin = {}
        for name, module_graphs in graphs.items():
            for symbol in public_symbols(module_graphs):
                if symbol["kind"]["identifier"] in ("swift.struct", "swift.enum", "swift.class", "swift.protocol", "swift.typealias"):
                    origin[symbol["identifier"]["precise"]] = f"{name}.{'.'.join(symbol['pathComponents'])}"
        unnamed = defaultdict(set)
        for module_graphs in graphs.values():
            for symbol in public_symbols(module_graphs):
                if symbol["identifier"]["precise"] not in exposed or symbol["kind"]["identifier"] == "swift.typealias":
                    continue
                for fragment in symbol.get("declarationFragments", []):
                    identifier = fragment.get("preciseIdentifier", "")
                    if fragment.get("kind") == "typeIdentifier" and identifier in origin and identifier not in exposed:
                        unnamed[origin[identifier]].add(".".join(symbol["pathComponents"]))
    if args.json:
        print(json.dumps({"module": args.module, "total": total, "counts": counts,
                          "reachableUnnamed": {k: sorted(v) for k, v in unnamed.items()}}))
    else:
        for name, count in counts.items():
            print(f"{count:6d}  {name}")
        print(f"{total:6d}  exposed by `import {args.module}`")
        for name, users in sorted(unnamed.items()):
            print(f"note: {name} is reachable but not exposed (through {', '.join(sorted(users)[:3])})")
    if args.max is not None and total > args.max:
        print(f"error: `import {args.module}` exposes {total} public declarations, more than {args.max}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
