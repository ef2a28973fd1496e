#!/usr/bin/env python3
"""Checks the engine modules' API surface: engine modules share API with
`package` access, and a declaration one of them leaves `public` (a type the
`Lattice` library shows apps) says why in a doc comment. Exits 1 listing
each public declaration without one.

Usage: scripts/check-api.py [MODULE ...] (default: the engine modules that are not products)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = ["LatticeCore", "LatticeCrypto", "LatticeProtocol", "LatticeStore", "LatticeNode", "LatticeTransport", "LatticeDiscovery", "LatticeFuzzing", "LatticeRawClient", "LatticeWeb"]
DECLARATION = re.compile(r"^\s*(?:@[\w]+(?:\([^)]*\))?\s+)*public\s")
ATTRIBUTE_LINE = re.compile(r"^\s*(?:@[\w]+(?:\([^)]*\))?\s*)+$")
# What a standard protocol requires is documented by the protocol (Equatable's ==, Codable's init(from:), ...).
WITNESS = re.compile(
    r"public (?:static func (?:==|<|\+|-)\s*\(|func hash\(into|var description: String|var debugDescription: String"
    r"|init\(from decoder|func encode\(to encoder|init\((?:stringLiteral|integerLiteral|floatLiteral|booleanLiteral|arrayLiteral|dictionaryLiteral|nilLiteral)"
    r"|init\?\(rawValue|let rawValue|var rawValue|func makeIterator|func next\(\)|var errorDescription)")


def undocumented(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    found = []
    for index, line in enumerate(lines):
        if not DECLARATION.match(line) or WITNESS.search(line):
            continue
        above = index - 1
        # Attributes on lines of their own (`@discardableResult`) stand between a declaration and its comment.
        while above >= 0 and ATTRIBUTE_LINE.match(lines[above]):
            above -= 1
        if above < 0 or not (lines[above].strip().startswith("///") or lines[above].strip().endswith("*/")):
            found.append((index + 1, line.strip()))
    return found


def main():
    modules = sys.argv[1:] or DEFAULT
    problems = []
    for module in modules:
        for directory, _, files in os.walk(os.path.join(ROOT, "Sources", module)):
            for name in sorted(files):
                if name.endswith(".swift"):
                    path = os.path.join(directory, name)
                    for number, text in undocumented(path):
                        problems.append(f"{os.path.relpath(path, ROOT)}:{number}: public without a doc comment: {text[:100]}")
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print(f"API: every public declaration of {', '.join(modules)} is documented")


if __name__ == "__main__":
    main()
