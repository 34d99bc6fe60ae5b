#!/usr/bin/env python3
"""lint.tidy_units: the clang-tidy cache skips a unit only while nothing it
depends on has changed.

A two-unit CMake + Ninja project in a temporary directory (a.cpp includes
h.hpp, b.cpp includes nothing of ours), compiled for real, so ninja records
the dependencies tidy_units.py reads. Each step edits one input and checks
which units tidy_units.py then lists to be checked.

Usage: test_tidy_units.py CLANG_TIDY
"""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TIDY = sys.argv.pop(1) if len(sys.argv) > 1 else "clang-tidy"


class TidyCache(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="xdpvhost-tidy-units-")
        self.addCleanup(shutil.rmtree, self.root)
        self.src = os.path.join(self.root, "src")
        self.build = os.path.join(self.src, "build")
        self.cache = os.path.join(self.root, "cache")
        os.makedirs(os.path.join(self.src, "lib"))
        os.makedirs(os.path.join(self.src, "daemon"))
        os.makedirs(self.cache)
        self.write(".clang-tidy", "Checks: 'bugprone-*'\n")
        self.write("CMakeLists.txt", "cmake_minimum_required(VERSION 3.20)\nproject(t CXX)\n"
                   "set(CMAKE_EXPORT_COMPILE_COMMANDS ON)\n"
                   "add_library(t STATIC lib/a.cpp daemon/b.cpp)\n")
        self.write("lib/h.hpp", "inline int h() { return 1; }\n")
        self.write("lib/a.cpp", '#include "h.hpp"\nint a() { return h(); }\n')
        self.write("daemon/b.cpp", "int b() { return 2; }\n")
        subprocess.run(["cmake", "-S", self.src, "-B", self.build, "-G", "Ninja"],
                       check=True, capture_output=True)
        self.compile()

    def write(self, path, text):
        with open(os.path.join(self.src, path), "w") as f:
            f.write(text)

    def compile(self):
        subprocess.run(["ninja", "-C", self.build], check=True, capture_output=True)

    def to_check(self, src=None, build=None):
        """{relative path: key} of the units tidy_units.py lists."""
        src, build = src or self.src, build or self.build
        out = subprocess.run([sys.executable, os.path.join(HERE, "tidy_units.py"),
                              os.path.join(build, "compile_commands.json"), src, build,
                              self.cache, TIDY], check=True, capture_output=True, text=True)
        self.assertEqual(out.stderr.strip(), "2")
        units = {}
        for line in out.stdout.splitlines():
            key, path = line.split(" ", 1)
            units[os.path.relpath(path, src)] = key
        return units

    def mark_clean(self, units):
        for key in units.values():
            self.assertNotEqual(key, "-")
            open(os.path.join(self.cache, key), "w").close()

    def test_a_unit_is_checked_again_only_when_something_it_includes_changes(self):
        first = self.to_check()
        self.assertEqual(sorted(first), ["daemon/b.cpp", "lib/a.cpp"])  # daemon/ first
        self.assertEqual(list(first)[0], "daemon/b.cpp")
        self.mark_clean(first)
        self.assertEqual(self.to_check(), {})

        self.write("lib/h.hpp", "inline int h() { return 3; }\n")
        self.compile()
        self.assertEqual(sorted(self.to_check()), ["lib/a.cpp"])

        self.write("daemon/b.cpp", "int b() { return 4; }\n")
        self.compile()
        self.assertEqual(sorted(self.to_check()), ["daemon/b.cpp", "lib/a.cpp"])

    def test_a_source_edited_after_the_build_is_checked(self):
        self.mark_clean(self.to_check())
        self.write("daemon/b.cpp", "int b() { return 5; }\n")  # not compiled again
        self.assertEqual(list(self.to_check()), ["daemon/b.cpp"])

    def test_the_config_is_part_of_every_key(self):
        self.mark_clean(self.to_check())
        self.write(".clang-tidy", "Checks: 'bugprone-*,performance-*'\n")
        self.assertEqual(sorted(self.to_check()), ["daemon/b.cpp", "lib/a.cpp"])

    def test_a_clone_elsewhere_hits_what_this_one_checked(self):
        self.mark_clean(self.to_check())
        clone = os.path.join(self.root, "clone")
        shutil.copytree(self.src, clone, ignore=shutil.ignore_patterns("build"))
        build = os.path.join(clone, "build")
        subprocess.run(["cmake", "-S", clone, "-B", build, "-G", "Ninja"],
                       check=True, capture_output=True)
        subprocess.run(["ninja", "-C", build], check=True, capture_output=True)
        self.assertEqual(self.to_check(clone, build), {})


if __name__ == "__main__":
    unittest.main()
