#!/usr/bin/env python3
"""lint.layers_check: check_layers.py finds an include against the layers.

A tree of a few files in a temporary directory: includes that follow the
layers pass; an upward one (lib/sys including dataplane/), a client that
includes the daemon, and a part the table does not know are each reported.
"""
import pathlib
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import check_layers  # noqa: E402


class Layers(unittest.TestCase):
    def setUp(self):
        self.root = pathlib.Path(tempfile.mkdtemp(prefix="xdpvhost-layers-"))
        self.addCleanup(shutil.rmtree, self.root)
        self.write("lib/sys/a.hpp", "#pragma once\n")
        self.write("lib/dataplane/port.hpp", '#include "sys/a.hpp"\n#include "net/x.hpp"\n')
        self.write("daemon/control/api.cpp", '#include "dataplane/port.hpp"\n#include "proto/c.hpp"\n')
        self.write("ctl/main.cpp", '#include "commands.hpp"\n#include "proto/c.hpp"\n')

    def write(self, rel, text):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    def test_includes_down_the_layers_pass(self):
        self.assertEqual(check_layers.check(self.root), [])

    def test_an_upward_include_is_reported(self):
        self.write("lib/sys/b.cpp", '#include "dataplane/port.hpp"\n')
        self.assertEqual(check_layers.check(self.root),
                         ['lib/sys/b.cpp: lib/sys includes "dataplane/port.hpp" (dataplane)'])

    def test_the_client_including_the_daemon_is_reported(self):
        self.write("ctl/x.cpp", '#include "control/api.hpp"\n')
        self.assertEqual(len(check_layers.check(self.root)), 1)

    def test_a_part_not_in_the_table_is_reported(self):
        self.write("lib/newpart/y.cpp", "\n")
        self.assertIn("not in LAYERS", check_layers.check(self.root)[0])


if __name__ == "__main__":
    unittest.main()
