#!/usr/bin/env python3
"""Checks the documents: every relative link resolves inside the repository,
no document names a path outside it, and the README's library quick start is
the code of Sources/readme-quickstart/main.swift, which every build compiles.
Exits 1 with each problem on a line of its own."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUICKSTART = os.path.join(ROOT, "Sources", "readme-quickstart", "main.swift")


def documents():
    yield os.path.join(ROOT, "README.md")
    yield os.path.join(ROOT, "CHANGELOG.md")
    yield os.path.join(ROOT, "Benchmarks", "README.md")
    for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
        if name.endswith(".md"):
            yield os.path.join(ROOT, "docs", name)


def anchors(path):
    """GitHub's anchors for a Markdown file's headings."""
    found = set()
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            match = re.match(r"#+\s+(.*)", line)
            if match:
                text = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
                found.add(text.replace(" ", "-"))
    return found


def check_links(path, problems):
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    where = os.path.relpath(path, ROOT)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
        if os.path.commonpath([resolved, ROOT]) != ROOT:
            problems.append(f"{where}: the link {target} leaves the repository")
        elif not os.path.exists(resolved):
            problems.append(f"{where}: the link {target} points to nothing")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            problems.append(f"{where}: the link {target} names no heading of {os.path.relpath(resolved, ROOT)}")
    for outside in re.findall(r"(?:\.\./shared/|/work/)[\w./-]*", text):
        problems.append(f"{where}: names {outside}, outside the repository")


def check_quickstart(problems):
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    blocks = [b for b in re.findall(r"```swift\n(.*?)```", readme, flags=re.S) if b.startswith("import Foundation\nimport Lattice\n")]
    code = open(QUICKSTART, encoding="utf-8").read()
    body = code[code.index("import Foundation\n"):]
    if len(blocks) != 1:
        problems.append(f"README.md: {len(blocks)} library quick starts (a block starting with 'import Foundation / import Lattice'), not one")
    elif blocks[0] != body:
        problems.append("README.md: the library quick start differs from Sources/readme-quickstart/main.swift (copy one to the other)")


def main():
    problems = []
    for path in documents():
        check_links(path, problems)
    check_quickstart(problems)
    for problem in problems:
        print(problem)
    if problems:
        sys.exit(1)
    print("documents: links resolve, none leaves the repository, the README's quick start compiles with the build")


if __name__ == "__main__":
    main()
