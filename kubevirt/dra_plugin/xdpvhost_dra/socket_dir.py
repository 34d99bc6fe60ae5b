"""Per-claim socket directories under --socket-root: made with the owner,
mode and SELinux label QEMU in the VM's pod needs (it creates vhost.sock
there, as the vhost-user server), and removed again.

Whether to label is decided from the host, not from what libselinux in
this container says (in a Debian image without selinuxfs it says
"disabled" on an enforcing RHCOS node, and QEMU then cannot create its
socket): a host whose files carry SELinux labels gives the socket root
one too (every file of an SELinux host has one), and a host with selinuxfs
mounted here labels. The label is written as libselinux's lsetfilecon
writes it: the security.selinux extended attribute, NUL-terminated."""

import errno
import logging
import os
import shutil
import stat

try:
    import posix1e  # python3-pylibacl (libacl)
except ImportError:  # pragma: no cover - bootstrap installs it
    posix1e = None

SOCKET_FILE = "vhost.sock"
SUN_PATH_MAX = 107  # bytes of a unix socket path, without the NUL

log = logging.getLogger("xdpvhost-dra.sockdir")


class SocketDirError(RuntimeError):
    pass


SELINUX_XATTR = "security.selinux"
_NO_XATTR = (errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP)


def selinux_label_of(path):
    """The SELinux label `path` carries (security.selinux), or None."""
    try:
        return os.getxattr(path, SELINUX_XATTR, follow_symlinks=False).rstrip(b"\0").decode()
    except OSError as e:
        if e.errno in _NO_XATTR:
            return None
        raise


def _selinuxfs_mounted(mounts="/proc/self/mounts"):
    try:
        with open(mounts) as f:
            return any(len(fields) > 2 and fields[2] == "selinuxfs" for fields in map(str.split, f))
    except OSError:
        return False


def host_labels_files(path):
    """Why the host labels files (a reason to show), or None: `path`, a
    directory of the host, has a label, or selinuxfs is mounted here."""
    label = selinux_label_of(path)
    if label:
        return f"the host labels its files ({path}: {label})"
    if _selinuxfs_mounted():
        return "selinuxfs is mounted"
    return None


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
        self._host_selinux = None  # host_labels_files(root), asked at the first directory

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
        if self._host_selinux is None:
            self._host_selinux = host_labels_files(self.root) or ""
            log.info("SELinux: %s", f"{self._host_selinux}: socket directories get label "
                     f"{self.selinux_label}" if self._host_selinux else
                     f"{self.root} has no label and selinuxfs is not mounted: the host does not "
                     "label files, nor do we")
        if not self._host_selinux:
            return "the host does not label files: not labelled"
        try:
            if selinux_label_of(path) != self.selinux_label:
                os.setxattr(path, SELINUX_XATTR, self.selinux_label.encode() + b"\0",
                            follow_symlinks=False)
        except OSError as e:
            if e.errno in _NO_XATTR:  # the filesystem's mount gives every file its context
                return f"SELinux label not set: {os.strerror(e.errno)} on this filesystem"
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
