#!/usr/bin/env python3
"""lint.references_check: check_references.py finds what does not resolve.

A small git repository in a temporary directory: links and named paths that
exist pass; a link to a missing file, a named path that is gone, and
references that resolve only outside the repo (a numbered issue, a numbered
seed, a contract file kept elsewhere) are each reported.
"""
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_references  # noqa: E402


class References(unittest.TestCase):
    def setUp(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="xdpvhost-references-"))
        self.addCleanup(shutil.rmtree, self.root)
        subprocess.run(["git", "init", "-q", str(self.root)], check=True)
        self.write("lib/sys/README.md", "# sys\n")
        self.write("lib/sys/unique_fd.hpp", "#pragma once\n")
        self.write("docs/guide.md",
                   "See [sys](../lib/sys/README.md#invariants), `lib/sys/unique_fd.hpp`,\n"
                   "`lib/sys/unique_fd` (a stem), `proto/methods/NAME.json` (a placeholder),\n"
                   "`build/daemon/xdpvhostd` (built) and [QEMU](https://www.qemu.org/).\n"
                   "```\ncat lib/missing.txt [x](nowhere.md)\n```\n")

    def write(self, rel, text):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        subprocess.run(["git", "-C", str(self.root), "add", rel], check=True)

    def test_what_exists_resolves(self):
        self.assertEqual(check_references.check(self.root), [])

    def test_a_link_to_a_missing_file_is_reported(self):
        self.write("docs/more.md", "[gone](../lib/gone.md)\n")
        self.assertEqual(len(check_references.check(self.root)), 1)

    def test_a_named_path_that_is_gone_is_reported(self):
        self.write("docs/more.md", "`lib/sys/old_name.hpp` holds it\n")
        self.assertIn("lib/sys/old_name.hpp", check_references.check(self.root)[0])

    def test_a_source_file_named_without_its_folder_must_exist_somewhere(self):
        self.write("lib/sys/README.md", "`unique_fd.hpp` and `<xdp/xsk.h>`\n")
        self.assertEqual(check_references.check(self.root), [])
        self.write("lib/sys/README.md", "`checksum.hpp` holds the sums\n")
        self.assertIn("checksum.hpp", check_references.check(self.root)[0])

    def test_references_that_resolve_elsewhere_are_reported(self):
        self.write("lib/sys/a.cpp", "// fixed in issue 12\n// seed 003: bound\n")
        self.write("kubevirt/x.py", '"""CONTRACT.md §6"""\n')
        broken = check_references.check(self.root)
        self.assertEqual(len(broken), 3, broken)


if __name__ == "__main__":
    unittest.main()
