#!/usr/bin/env python3
"""Every reference in the repo's documents resolves inside the repo.

Checks each tracked Markdown file for
  - links [text](target) to a relative target: the file or folder must
    exist (relative to the document; an #anchor is ignored);
  - named paths in backticks (`lib/dataplane/guest_port.cpp`,
    `tests/unit/vhost/`): a path that starts with a top-level folder of the
    repo must exist, and a source file named without its folder
    (`guest_port.hpp`) must be some file's name. A path with a wildcard (*, {, <, ...), a placeholder
    in capitals (NAME) or a build output (build/, build-fuzz/) is not
    checked; a path without its extension names the files it starts
    (daemon/control/control_server: .cpp and .hpp);
and every tracked text file for references that only resolve elsewhere: a
file outside the repo (CONTRACT.md, shared/reference), a numbered issue of
the tracker, a numbered seed (name the technique: docs/techniques.md).
Prints each reference that does not resolve and exits 1 if there is one.
Run: check_references.py SOURCE_DIR
"""

import pathlib
import re
import subprocess
import sys

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"`([^`\n]+)`")
WILDCARD = re.compile(r"[*{}<>$?\[\]|]|\.\.\.")
SKIP_PREFIX = ("build/", "build-fuzz/", "build-")
# A source file named without its folder (`guest_port.hpp` in a folder's
# README): some file in the repo has that name.
BARE_FILE = re.compile(r"^[A-Za-z0-9_.-]+\.(hpp|cpp|h|c|py|sh|mjs|proto)$")
PLACEHOLDER = re.compile(r"(^|/)(NAME|N|X|ID|DIR|PATH|VERSION)(\.|/|$)")
# References that resolve only outside the repo, and what to write instead.
ELSEWHERE = [
    (re.compile(r"CONTRACT\.md|shared/reference"),
     "a file outside the repo (kubevirt/INTERFACES.md says it in the repo's words)"),
    (re.compile(r"\b[Ii]ssues? #?[0-9]+\b"), "a numbered issue: say what it means"),
    (re.compile(r"\b[Ss]eeds? 0[0-9]{2}\b"),
     "a numbered seed: name the technique (docs/techniques.md)"),
]
TEXT = re.compile(r"\.(md|c|h|cpp|hpp|py|sh|txt|cmake|proto|json|ya?ml|mjs|js|toml|rst)$|"
                  r"(^|/)(CMakeLists\.txt|Dockerfile|run)$")
# This checker and its test spell the patterns out.
SELF = ("tests/lint/check_references.py", "tests/lint/test_check_references.py")


def tracked(root: pathlib.Path) -> list[str]:
    out = subprocess.run(["git", "-C", str(root), "ls-files"], check=True, capture_output=True,
                         text=True).stdout
    return [line for line in out.splitlines() if line]


def top_folders(files: list[str]) -> set[str]:
    return {f.split("/")[0] for f in files if "/" in f}


def exists(root: pathlib.Path, files: set[str], rel: str) -> bool:
    rel = rel.rstrip("/")
    if rel in files:
        return True
    prefix = rel + "/"
    stem = rel + "."
    return any(f.startswith(prefix) or f.startswith(stem) for f in files) or (root / rel).exists()


def check(root: pathlib.Path) -> list[str]:
    all_files = tracked(root)
    files = set(all_files)
    tops = top_folders(all_files)
    basenames = {f.rsplit("/", 1)[-1] for f in all_files}
    broken = []
    for doc in sorted(f for f in all_files if f.endswith(".md")):
        path = root / doc
        if not path.exists():
            continue
        base = pathlib.PurePosixPath(doc).parent
        text = path.read_text(errors="replace")
        # Fenced code blocks hold commands and diagrams, not references.
        prose = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
        for n, line in enumerate(prose.splitlines(), 1):
            for target in LINK.findall(line) + IMAGE.findall(line):
                if re.match(r"^[a-z]+:", target) or target.startswith("#"):
                    continue
                target = target.split("#")[0]
                rel = str(pathlib.PurePosixPath(base, target))
                rel = str(pathlib.PurePosixPath(*_normalise(rel)))
                if not exists(root, files, rel):
                    broken.append(f"{doc}: link to {target} ({rel}) does not exist")
            for named in CODE.findall(line):
                named = named.strip()
                if BARE_FILE.match(named) and named not in basenames:
                    broken.append(f"{doc}: names `{named}`, which no file in the repo is called")
                    continue
                if " " in named or "/" not in named or WILDCARD.search(named):
                    continue
                named = named.split(":")[0]  # file:line
                if named.startswith("./"):
                    named = named[2:]
                if named.split("/")[0] not in tops or named.startswith(SKIP_PREFIX):
                    continue
                if PLACEHOLDER.search(named):
                    continue
                if not exists(root, files, named):
                    broken.append(f"{doc}: names `{named}`, which does not exist")
    for name in all_files:
        if name in SELF or not TEXT.search(name) or not (root / name).is_file():
            continue
        text = (root / name).read_text(errors="replace")
        for n, line in enumerate(text.splitlines(), 1):
            for pattern, why in ELSEWHERE:
                if m := pattern.search(line):
                    broken.append(f"{name}:{n}: \"{m.group(0)}\" is {why}")
    return broken


def _normalise(rel: str) -> list[str]:
    parts: list[str] = []
    for p in rel.split("/"):
        if p in ("", "."):
            continue
        if p == ".." and parts:
            parts.pop()
        else:
            parts.append(p)
    return parts or ["."]


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    broken = check(root)
    for line in broken:
        print(line)
    print(f"{len(broken)} reference(s) that do not resolve")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
