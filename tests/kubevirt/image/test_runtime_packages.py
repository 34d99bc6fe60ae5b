"""deploy/Dockerfile's runtime stage installs every Debian package the
image's programs need, checked without building the image:

- every shared library `ldd` names for xdpvhostd and xdpvhostctl (as built
  here, from the same Debian 12 packages) belongs, by `dpkg -S`, to a
  package the runtime stage's `apt-get install` lists;
- every module the DRA plugin and the sidecar import from outside the
  standard library and the project belongs to a listed package;
- the sidecar stage carries each DRA plugin module the sidecar imports, and
  those import nothing beyond the standard library.

The image build itself (podman, from a locally made Debian 12 base) and
starting the daemon in it are scripts/image-test.sh, outside CI.

    test_runtime_packages.py XDPVHOSTD XDPVHOSTCTL"""

import ast
import glob
import os
import re
import subprocess
import sys
import sysconfig
import unittest
import importlib.util

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
DOCKERFILE = os.path.join(ROOT, "deploy", "Dockerfile")
BINARIES = sys.argv[1:3]
PROJECT_MODULES = {"xdpvhost_dra", "xdpvhost_sidecar", "kubevirt_hooks"}


def stages(text):
    """{stage name: [instruction lines]} with continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    out, current = {}, None
    for line in joined.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        m = re.match(r"FROM\s+\S+(?:\s+AS\s+(\S+))?", line, re.I)
        if m:
            current = m.group(1) or f"stage{len(out)}"
            out[current] = []
        elif current:
            out[current].append(line)
    return out


def installed_packages(stage_lines):
    pkgs = set()
    for line in stage_lines:
        if not line.startswith("RUN"):
            continue
        for cmd in re.split(r"&&|;", line):
            m = re.search(r"apt-get\s+install\s+(.*)", cmd)
            if m:
                pkgs |= {w for w in m.group(1).split() if not w.startswith("-")}
    return pkgs


def owner(path):
    """The Debian package that ships `path` (merged-/usr aware)."""
    candidates = [path, os.path.realpath(path)]
    for p in list(candidates):
        if p.startswith("/usr/lib/"):
            candidates.append(p[len("/usr"):])
        elif p.startswith("/lib/") or p.startswith("/lib64/"):
            candidates.append("/usr" + p)
    for p in candidates:
        r = subprocess.run(["dpkg", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return r.stdout.split(":")[0].strip()
    raise AssertionError(f"no Debian package ships {path}")


def libraries(binary):
    r = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True)
    libs = []
    for line in r.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            raise AssertionError(f"{binary}: {line}")
        m = re.match(r"\S+ => (/\S+)", line) or re.match(r"(/\S+) \(", line)
        if m:
            libs.append(m.group(1))
    return libs


def imported_modules_of(path):
    mods = set()
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.Import):
            mods |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            mods.add(node.module.split(".")[0])
    return mods


def imported_modules(folder):
    mods = set()
    for path in glob.glob(os.path.join(folder, "**", "*.py"), recursive=True):
        mods |= imported_modules_of(path)
    return mods


def plugin_modules_imported(folder):
    """The xdpvhost_dra modules that code in `folder` imports."""
    mods = set()
    for path in glob.glob(os.path.join(folder, "**", "*.py"), recursive=True):
        for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
            if isinstance(node, ast.ImportFrom) and node.module == "xdpvhost_dra":
                mods |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("xdpvhost_dra."):
                mods.add(node.module.split(".")[1])
    return mods


class RuntimeStage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(DOCKERFILE, encoding="utf-8") as f:
            cls.stages = stages(f.read())
        cls.runtime = installed_packages(cls.stages["runtime"])
        cls.sidecar = installed_packages(cls.stages["sidecar"])

    def test_runtime_is_the_default_stage(self):
        self.assertEqual(list(self.stages)[-1], "runtime")

    def test_every_library_of_the_binaries_is_installed(self):
        self.assertEqual(len(BINARIES), 2, "usage: test_runtime_packages.py XDPVHOSTD XDPVHOSTCTL")
        for binary in BINARIES:
            libs = libraries(binary)
            self.assertGreater(len(libs), 3, binary)
            for lib in libs:
                with self.subTest(binary=os.path.basename(binary), library=lib):
                    self.assertIn(owner(lib), self.runtime)

    def python_packages(self, folder):
        stdlib = sysconfig.get_paths()["stdlib"]
        pkgs = {}
        for mod in sorted(imported_modules(folder) - PROJECT_MODULES):
            if mod in sys.builtin_module_names:
                continue
            spec = importlib.util.find_spec(mod)
            self.assertIsNotNone(spec, f"{folder}: module {mod} is not installed here")
            origin = spec.origin or (list(spec.submodule_search_locations or [""])[0])
            if origin in ("built-in", "frozen") or origin.startswith(stdlib):
                continue
            pkgs[mod] = owner(origin if not origin.endswith("__init__.py") else os.path.dirname(origin))
        return pkgs

    def test_dra_plugin_modules_are_installed(self):
        for mod, pkg in self.python_packages(os.path.join(ROOT, "kubevirt", "dra_plugin")).items():
            with self.subTest(mod):
                self.assertIn(pkg, self.runtime)

    def test_sidecar_modules_are_installed_in_both_stages(self):
        pkgs = self.python_packages(os.path.join(ROOT, "kubevirt", "sidecar"))
        self.assertIn("grpc", pkgs)
        for mod, pkg in pkgs.items():
            with self.subTest(mod):
                self.assertIn(pkg, self.runtime)
                self.assertIn(pkg, self.sidecar)

    def test_the_sidecar_stage_carries_the_plugin_modules_the_sidecar_imports(self):
        shared = plugin_modules_imported(os.path.join(ROOT, "kubevirt", "sidecar"))
        self.assertIn("names", shared)
        copies = [line for line in self.stages["build"] if "$lib/xdpvhost_dra/" in line]
        self.assertTrue(copies, "the build stage copies no module to $lib/xdpvhost_dra")
        for mod in sorted(shared | {"__init__"}):
            with self.subTest(mod):
                self.assertIn(f"kubevirt/dra_plugin/xdpvhost_dra/{mod}.py", " ".join(copies))
                path = os.path.join(ROOT, "kubevirt", "dra_plugin", "xdpvhost_dra", f"{mod}.py")
                outside = {m for m in imported_modules_of(path)
                           if m not in sys.stdlib_module_names}
                self.assertEqual(outside, set(), f"{mod}.py imports beyond the standard library")
        self.assertTrue(any(line.startswith("COPY --from=build") and line.rstrip().endswith(
            "/usr/local/lib/xdpvhost/xdpvhost_dra") for line in self.stages["sidecar"]))

    def test_generated_stubs_runtime(self):
        # the generated *_pb2 modules import google.protobuf
        self.assertIn(owner(os.path.dirname(importlib.util.find_spec("google.protobuf").origin)),
                      self.sidecar & self.runtime)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
