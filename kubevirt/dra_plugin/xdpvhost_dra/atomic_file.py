"""Files written whole or not at all: a temporary file in the same
directory, fsync, rename over the target, fsync of the directory."""

import json
import os
import tempfile


def write_bytes(path, data, mode=0o644):
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def write_json(path, obj, mode=0o644, indent=2):
    """Writes obj as JSON; returns False (and leaves the file alone) when it
    already holds exactly that text."""
    data = (json.dumps(obj, indent=indent) + "\n").encode()
    try:
        with open(path, "rb") as f:
            if f.read() == data:
                return False
    except OSError:
        pass
    write_bytes(path, data, mode)
    return True


def remove(path):
    """Unlinks path; False when it was not there."""
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False
