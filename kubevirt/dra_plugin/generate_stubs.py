#!/usr/bin/python3
"""Generates the DRA plugin's gRPC stubs from kubevirt/proto into OUT_DIR
(does nothing when they are up to date). Run by the build and by image
builds; the plugin finds them through XDPVHOST_DRA_STUBS_DIR=OUT_DIR."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from xdpvhost_dra import stubs  # noqa: E402

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} OUT_DIR")
    try:
        print(stubs.generate(sys.argv[1]))
    except stubs.StubsError as e:
        sys.exit(f"generate_stubs: {e}")
