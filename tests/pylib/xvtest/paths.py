"""Where the suites find the tree's pieces when ctest does not tell them:
the source root, proto/, and binaries of the build tree `build/` (an
environment variable names each one; ctest sets them all)."""

import os

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def built(env, *parts):
    """$env, else ROOT/build/<parts>."""
    return os.environ.get(env) or os.path.join(ROOT, "build", *parts)


def xdpvhostd():
    return built("XDPVHOSTD", "daemon", "xdpvhostd")


def proto_dir():
    """$XDPVHOST_PROTO, else ROOT/proto."""
    return os.environ.get("XDPVHOST_PROTO") or os.path.join(ROOT, "proto")
