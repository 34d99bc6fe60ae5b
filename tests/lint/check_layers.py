#!/usr/bin/env python3
"""The include graph follows the layers: no part includes one above it.

Every quoted #include in lib/, daemon/ and ctl/ is resolved to the part it
names ("dataplane/port.hpp" -> lib/dataplane) and checked against LAYERS,
the one table of what each part may use. A bare name ("commands.hpp") is a
file of the same part. Prints every edge that breaks the table and exits 1
if there is one. Run: check_layers.py SOURCE_DIR
"""

import pathlib
import re
import sys

# What each part may include besides itself. Lower layers first; a part
# never uses one listed after it.
LIB = ["sys", "net", "virtio", "vhost", "xsk", "nic", "dataplane", "controller"]
LAYERS = {
    "lib/sys": set(),
    "lib/net": {"sys"},
    "lib/virtio": {"sys"},
    "lib/vhost": {"sys", "virtio"},
    "lib/xsk": {"sys"},
    "lib/nic": {"sys", "net", "bpf"},
    "lib/dataplane": {"sys", "net", "virtio", "vhost", "xsk", "nic"},
    "lib/controller": set(LIB) - {"controller"},
    # The control protocol's C++ vocabulary (the JSON-RPC error codes).
    "proto": {"sys"},
    "daemon/json_schema": set(),
    "daemon/schemas": {"json_schema"},
    "daemon/config": set(LIB) | {"json_schema", "schemas"},
    "daemon/runtime": set(LIB) | {"json_schema", "schemas", "config"},
    "daemon/control": set(LIB) | {"json_schema", "schemas", "config", "runtime", "proto"},
    "daemon/metrics": set(LIB) | {"config", "runtime", "control", "proto"},
    "daemon": set(LIB) | {"json_schema", "schemas", "config", "runtime", "control", "metrics",
                          "proto"},
    # The client: the protocol and the counter tables, never the daemon.
    "ctl": {"sys", "dataplane", "proto"},
}
# Headers a part's build provides under a bare name (the XDP program's ABI).
BARE_FROM = {"xdp_steer_abi.h": "bpf"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def part_of(path: pathlib.Path, root: pathlib.Path) -> str:
    rel = path.relative_to(root).parts
    if rel[0] in ("lib", "daemon") and len(rel) > 2:
        return f"{rel[0]}/{rel[1]}"
    if rel[0] == "proto":
        return "proto"
    return rel[0]


def sources(root: pathlib.Path):
    for top in ("lib", "daemon", "ctl", "proto"):
        for path in sorted((root / top).rglob("*")):
            if path.suffix in (".cpp", ".hpp", ".h") and "/bpf/" not in str(path):
                yield path


def check(root: pathlib.Path) -> list[str]:
    broken = []
    for path in sources(root):
        part = part_of(path, root)
        allowed = LAYERS.get(part)
        if allowed is None:
            broken.append(f"{path.relative_to(root)}: part {part} is not in LAYERS")
            continue
        own = part.split("/")[-1]
        for name in INCLUDE.findall(path.read_text()):
            if "/" not in name:
                used = BARE_FROM.get(name, own)
            else:
                used = name.split("/")[0]
            if used != own and used not in allowed:
                broken.append(f"{path.relative_to(root)}: {part} includes \"{name}\" ({used})")
    return broken


def main() -> int:
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    broken = check(root)
    for line in broken:
        print(line)
    count = sum(1 for _ in sources(root))
    print(f"{count} files, {len(broken)} include(s) against the layers")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
