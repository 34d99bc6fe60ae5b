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

SOCKET_FILE = "vhost.sock"
SUN_PATH_MAX = 107  # bytes of a unix socket path, without the NUL

log = logging.getLogger("xdpvhost-dra.sockdir")


class SocketDirError(RuntimeError):
    pass


def selinux_enabled():
    if selinux is not None:
        return bool(selinux.is_selinux_enabled())
    return os.path.exists("/sys/fs/selinux/enforce")


class SocketDirs:
    def __init__(self, root, uid, gid, mode, selinux_label):
        self.root = os.path.abspath(root)
        self.uid, self.gid, self.mode = uid, gid, mode
        self.selinux_label = selinux_label

    def path(self, key):
        return os.path.join(self.root, key)

    def socket(self, key):
        return os.path.join(self.root, key, SOCKET_FILE)

    def longest_key(self):
        """How long a key may be for <root>/<key>/vhost.sock to fit sun_path."""
        return SUN_PATH_MAX - len(os.fsencode(self.root)) - 2 - len(SOCKET_FILE)

    def ensure(self, key, why="prepare"):
        """Makes (or repairs) the directory; returns its path."""
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
        if stat.S_IMODE(st.st_mode) != self.mode:
            os.chmod(path, self.mode)  # mkdir's mode passed the umask
        label = self._label(path)
        if made:
            log.info("socket dir %s made (%s): owner %d:%d, mode %04o, %s", path, why, self.uid,
                     self.gid, self.mode, label)
        return path

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
