#!/usr/bin/env python3
"""The translation units lint.clang_tidy checks, each with its cache key.

Usage: tidy_units.py COMPILE_COMMANDS SOURCE_DIR BUILD_DIR CACHE_DIR CLANG_TIDY

Prints "KEY PATH" per unit of lib/ and daemon/ to check, daemon/ first (its units
include json, asio and CLI11 and take longest; the short lib/ ones even out
the queues at the end). With a CACHE_DIR, a unit whose key has a file there
was checked clean before and is left out (its file is touched, so that
pruning by age keeps what is in use); clang_tidy.sh adds the key of each unit
it finds clean. The number of units, checked or not, goes to stderr.

A key is a hash of everything clang-tidy's verdict depends on: its version,
the .clang-tidy config, the unit's compile command (source and build
directories replaced by placeholders, so a fresh clone elsewhere hits), and
the path and content of every file the unit includes, as ninja recorded them
when it compiled the unit (`ninja -t deps`). Without ninja's record (another
generator, or the unit not built) the unit has no key and is always checked.
"""
import hashlib
import json
import os
import shlex
import subprocess
import sys


def main():
    db, src, build, cache, tidy = sys.argv[1:6]
    src, build = os.path.realpath(src), os.path.realpath(build)
    units = {}
    for entry in json.load(open(db)):
        path = os.path.normpath(os.path.join(entry["directory"], entry["file"]))
        top = os.path.relpath(path, src).split(os.sep)[0]
        if top in ("daemon", "lib") and path not in units:
            units[path] = entry
    order = sorted(units, key=lambda path: (os.path.relpath(path, src).split(os.sep)[0] != "daemon", path))

    print(len(order), file=sys.stderr)
    deps = ninja_deps(build) if cache else {}
    contents = {}

    def relative(text):
        return text.replace(build, "@BUILD@").replace(src, "@SRC@")

    def file_hash(path):
        if path not in contents:
            try:
                with open(path, "rb") as f:
                    contents[path] = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                contents[path] = "missing"
        return contents[path]

    common = hashlib.sha256()
    common.update(subprocess.run([tidy, "--version"], capture_output=True).stdout)
    common.update(open(os.path.join(src, ".clang-tidy"), "rb").read())

    for path in order:
        entry = units[path]
        inputs = deps.get(object_file(entry))
        key = "-"
        if inputs:
            h = common.copy()
            h.update(relative(entry.get("command", " ".join(entry.get("arguments", [])))).encode())
            for dep in sorted(set(inputs) | {path}):
                h.update(relative(dep).encode() + b"\0" + file_hash(dep).encode() + b"\n")
            key = h.hexdigest()
            stamp = os.path.join(cache, key)
            if os.path.exists(stamp):
                os.utime(stamp)
                continue
        print(key, path)


def object_file(entry):
    """The object a compile_commands.json entry writes (its -o), absolute."""
    args = entry.get("arguments") or shlex.split(entry.get("command", ""))
    for i, arg in enumerate(args[:-1]):
        if arg == "-o":
            return os.path.normpath(os.path.join(entry["directory"], args[i + 1]))
    return None


def ninja_deps(build):
    """Object file (absolute) -> the files it was compiled from."""
    if not os.path.exists(os.path.join(build, ".ninja_deps")):
        return {}
    out = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True, text=True)
    deps, current = {}, None
    for line in out.stdout.splitlines():
        if not line.strip():
            current = None
        elif not line.startswith(" "):
            # "lib/x/CMakeFiles/t.dir/a.cpp.o: #deps 812, deps mtime ... (VALID)"
            name = line.split(":", 1)[0]
            current = None if "(VALID)" not in line else os.path.normpath(os.path.join(build, name))
            if current:
                deps[current] = []
        elif current:
            deps[current].append(os.path.normpath(os.path.join(build, line.strip())))
    return deps


if __name__ == "__main__":
    main()
