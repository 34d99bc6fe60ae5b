"""Per-claim socket directories under --socket-root: made with the owner,
mode and SELinux label QEMU in the VM's pod needs (it creates vhost.sock
there, as the vhost-user server), and removed again."""

import errno
import logging
import os
import shutil
import stat

try:
    import selinux  # python3-selinux (libselinux)
except ImportError:  # pragma: no cover - bootstrap installs it
    selinux = None
try:
    import posix1e  # python3-pylibacl (libacl)
except ImportError:  # pragma: no cover - bootstrap installs it
    posix1e = None

SOCKET_FILE = "vhost.sock"
SUN_PATH_MAX = 107  # bytes of a unix socket path, without the NUL

log = logging.getLogger("xdpvhost-dra.sockdir")


class SocketDirError(RuntimeError):
    pass


def selinux_enabled():
    if selinux is not None:
        return bool(selinux.is_selinux_enabled())
    return os.path.exists("/sys/fs/selinux/enforce")


def _bits(b):
    return "".join(c if b & m else "-" for c, m in (("r", 4), ("w", 2), ("x", 1)))


def acl_text(mode, entries):
    """POSIX ACL text of a socket directory: the mode's owner, group and
    other bits, rwx for each named entry ("u", id) / ("g", id), mask rwx."""
    if not entries:
        return ""
    named = ",".join(f"{'user' if kind == 'u' else 'group'}:{ident}:rwx" for kind, ident in entries)
    return (f"user::{_bits(mode >> 6)},group::{_bits(mode >> 3)},other::{_bits(mode)},"
            f"{named},mask::rwx")


class SocketDirs:
    def __init__(self, root, uid, gid, mode, selinux_label, acl=()):
        self.root = os.path.abspath(root)
        self.uid, self.gid, self.mode = uid, gid, mode
        self.selinux_label = selinux_label
        self.acl = acl_text(mode, list(acl))
        self.acl_entries = list(acl)

    def path(self, key):
        return os.path.join(self.root, key)

    def socket(self, key):
        return os.path.join(self.root, key, SOCKET_FILE)

    def longest_key(self):
        """How long a key may be for <root>/<key>/vhost.sock to fit sun_path."""
        return SUN_PATH_MAX - len(os.fsencode(self.root)) - 2 - len(SOCKET_FILE)

    def ensure(self, key, why="prepare"):
        """Makes (or repairs) the directory; returns whether it had to make it."""
        path = self.path(key)
        os.makedirs(self.root, mode=0o755, exist_ok=True)
        try:
            os.mkdir(path, self.mode)
            made = True
        except FileExistsError:
            made = False
        st = os.lstat(path)
        if not stat.S_ISDIR(st.st_mode):
            raise SocketDirError(f"{path} exists and is not a directory")
        if (st.st_uid, st.st_gid) != (self.uid, self.gid):
            os.chown(path, self.uid, self.gid, follow_symlinks=False)
        if not self.acl and stat.S_IMODE(st.st_mode) != self.mode:
            os.chmod(path, self.mode)  # mkdir's mode passed the umask
        acl = self._apply_acl(path)
        label = self._label(path)
        if made:
            log.info("socket dir %s made (%s): owner %d:%d, mode %04o, %s, %s", path, why, self.uid,
                     self.gid, self.mode, acl, label)
        return made

    def _apply_acl(self, path):
        """Access and default ACL with the named entries (D1's aclUsers), so
        that these users and groups may enter the directory and reach what
        QEMU creates in it. With an ACL the mode's group bits show the mask."""
        if not self.acl:
            return "no ACL"
        if posix1e is None:
            raise SocketDirError(f"{path}: --socket-acl needs python3-pylibacl")
        acl = posix1e.ACL(text=self.acl)
        try:
            current = posix1e.ACL(file=path).to_any_text(options=posix1e.TEXT_NUMERIC_IDS)
            default = posix1e.ACL(filedef=path).to_any_text(options=posix1e.TEXT_NUMERIC_IDS)
            wanted = acl.to_any_text(options=posix1e.TEXT_NUMERIC_IDS)
            if current != wanted:
                acl.applyto(path)
            if default != wanted:
                acl.applyto(path, posix1e.ACL_TYPE_DEFAULT)
        except OSError as e:
            raise SocketDirError(f"{path}: setting ACL {self.acl}: {e.strerror or e}") from e
        return "ACL " + ",".join(f"{k}:{i}:rwx" for k, i in self.acl_entries) + " (access and default)"

    def _label(self, path):
        if not self.selinux_label:
            return "no SELinux label configured"
        if not selinux_enabled():
            return "SELinux not enabled on this host: not labelled"
        if selinux is None:
            raise SocketDirError(f"{path}: SELinux is enabled but python3-selinux is not installed")
        try:
            current = selinux.lgetfilecon(path)[1]
        except OSError:
            current = None
        if current != self.selinux_label:
            try:
                selinux.lsetfilecon(path, self.selinux_label)
            except OSError as e:
                raise SocketDirError(f"{path}: setting SELinux label {self.selinux_label}: "
                                     f"{e.strerror or e}") from e
        return f"SELinux label {self.selinux_label}"

    def remove(self, key):
        """Removes the directory and whatever QEMU left in it; False when it
        was not there."""
        path = self.path(key)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(path)
            return True
        try:
            shutil.rmtree(path)
        except OSError as e:
            if e.errno != errno.ENOENT:
                raise
        log.info("socket dir %s removed", path)
        return True
