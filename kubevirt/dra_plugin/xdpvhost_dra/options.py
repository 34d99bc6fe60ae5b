"""Command-line flags. The plugin's basic ones (--kubelet-root,
--control-socket, --socket-root, --cdi-root, --state-dir, --node-name,
--kubeconfig) plus the socket directories' owner, mode and SELinux label,
the path inside the pod, and the published devices and capacity."""

import argparse
import grp
import os
import pwd

from . import DRIVER_NAME, launcher, log_setup, metrics_server, names, port_mac, resource_slice, socket_watch
from .socket_dir import SOCKET_FILE, SUN_PATH_MAX
from .names import KEY_HEX


def _owner(text):
    try:
        user, _, group = text.partition(":")
        uid = int(user) if user.isdigit() else pwd.getpwnam(user).pw_uid
        gid = uid if not group else (int(group) if group.isdigit() else grp.getgrnam(group).gr_gid)
        return uid, gid
    except (KeyError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r}: want UID:GID (numbers or names known here)")


def _acl(text):
    """u:USER,g:GROUP,... (ids or names known here) -> [("u", uid), ("g", gid)]."""
    entries = []
    for item in filter(None, (t.strip() for t in text.split(","))):
        kind, _, who = item.partition(":")
        try:
            if kind == "u":
                ident = int(who) if who.isdigit() else pwd.getpwnam(who).pw_uid
            elif kind == "g":
                ident = int(who) if who.isdigit() else grp.getgrnam(who).gr_gid
            else:
                raise ValueError
        except (KeyError, ValueError):
            raise argparse.ArgumentTypeError(f"{item!r}: want u:UID or g:GID (numbers or names known here)")
        entries.append((kind, ident))
    return entries


def _mode(text):
    try:
        mode = int(text, 8)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: want an octal mode such as 0750")
    if not 0 <= mode <= 0o777:
        raise argparse.ArgumentTypeError(f"{text!r}: want permission bits only (0000..0777)")
    return mode


def _mac_prefix(text):
    try:
        return port_mac.parse_prefix(text)
    except port_mac.MacError as e:
        raise argparse.ArgumentTypeError(str(e))


def add_rolling_update_uid(p):
    p.add_argument("--rolling-update-uid", default=os.environ.get("POD_UID") or None, metavar="UID",
                   type=_rolling_update_uid,
                   help="this instance's sockets are dra-UID.sock and %s-UID-reg.sock, so that the old "
                        "and the new pod of a rolling update serve side by side (kubelet 1.33+); the "
                        "pod's UID (default: $POD_UID; none: dra.sock and %s-reg.sock)"
                        % (DRIVER_NAME, DRIVER_NAME))


def _rolling_update_uid(text):
    try:
        return names.uid("--rolling-update-uid", text)
    except names.InvalidName as e:
        raise argparse.ArgumentTypeError(str(e))


def parser():
    p = argparse.ArgumentParser(
        prog="xdpvhost-dra-plugin",
        description=f"DRA kubelet plugin of driver {DRIVER_NAME}: vhost-user ports of xdpvhostd for "
                    "KubeVirt VMs. `xdpvhost-dra-plugin probe --help`: its liveness probe.")
    p.add_argument("--kubelet-root", default="/var/lib/kubelet", metavar="DIR",
                   help="the kubelet's root: plugins_registry/ and plugins/%s/ are used as the kubelet "
                        "lays them out (default: %%(default)s)" % DRIVER_NAME)
    p.add_argument("--control-socket", default="/run/xdpvhost/control.sock", metavar="PATH",
                   help="xdpvhostd's control socket (default: %(default)s)")
    p.add_argument("--socket-root", default="/var/run/xdpvhost/claims", metavar="DIR",
                   help="where per-claim socket directories are made; must be one of the daemon's "
                        "socket_dirs when its config restricts them (default: %(default)s)")
    p.add_argument("--cdi-root", default="/var/run/cdi", metavar="DIR",
                   help="where CDI spec files are written (default: %(default)s)")
    p.add_argument("--state-dir", metavar="DIR",
                   help="where the plugin keeps one state file per prepared claim; must survive "
                        "restarts of the plugin (default: <kubelet-root>/plugins/%s/state)" % DRIVER_NAME)
    p.add_argument("--node-name", default=os.environ.get("NODE_NAME"), metavar="NAME",
                   help="this node's name: the ResourceSlice's node and pool (default: $NODE_NAME)")
    add_rolling_update_uid(p)
    p.add_argument("--kubeconfig", metavar="FILE",
                   help="kubeconfig for the API server (default: in-cluster service account)")
    p.add_argument("--socket-owner", type=_owner, default=(107, 107), metavar="UID:GID",
                   help="owner of the socket directories: QEMU's user in virt-launcher (default: 107:107)")
    p.add_argument("--socket-dir-mode", type=_mode, default=0o750, metavar="MODE",
                   help="mode of the socket directories (default: 0750)")
    p.add_argument("--socket-acl", type=_acl, default=[], metavar="u:UID,g:GID,...",
                   help="users and groups given rwx on the socket directories by an access and a "
                        "default POSIX ACL (for a daemon that is neither root nor the owner); "
                        "default: none")
    p.add_argument("--selinux-label", default="system_u:object_r:container_file_t:s0", metavar="LABEL",
                   help="SELinux label of the socket directories where the host labels its files "
                        "(the socket root has a label, or selinuxfs is mounted); empty: none "
                        "(default: %(default)s)")
    p.add_argument("--container-socket-root", default="/var/run/xdpvhost", metavar="DIR",
                   help="inside the VM's pod, a claim request's directory is "
                        "DIR/<pod claim name>/<request> (default: %(default)s)")
    p.add_argument("--ports-capacity", type=int, default=256, metavar="N",
                   help="ports capacity published per uplink device (default: %(default)s)")
    p.add_argument("--device-mode", default=resource_slice.AUTO, choices=resource_slice.DEVICE_MODES,
                   help="shared: one device per uplink that many claims share (needs the feature gate "
                        "DRAConsumableCapacity, on by default from Kubernetes 1.36); slots: "
                        "--ports-per-uplink devices per uplink, one claim each (any Kubernetes with "
                        "resource.k8s.io/v1); auto: shared where the API server keeps its fields, "
                        "else slots (default: %(default)s)")
    p.add_argument("--ports-per-uplink", type=int, default=32, metavar="N",
                   help="devices per uplink in device mode slots, 1..%d for all uplinks together "
                        "(default: %%(default)s)" % resource_slice.MAX_SLOTS)
    p.add_argument("--default-mtu", type=int, default=1500, metavar="N",
                   help="MTU of an uplink device whose interface is not visible to the plugin "
                        "(default: %(default)s)")
    p.add_argument("--reconcile-interval", type=float, default=10.0, metavar="SECONDS",
                   help="how often the plugin checks the daemon's ports and the ResourceSlice "
                        "(default: %(default)s)")
    p.add_argument("--socket-grace", type=float, default=socket_watch.GRACE_S, metavar="SECONDS",
                   help="a VM's vhost-user socket must be in its claim's directory this long after the "
                        "VM's container started; else the claim is reported (the runtime did not "
                        "apply the CDI device) (default: %(default)s)")
    p.add_argument("--launcher-wait", type=float, default=launcher.WAIT_S, metavar="SECONDS",
                   help="how long a prepare waits for KubeVirt to list a virt-launcher pod among its "
                        "VMI's pods (status.activePods) before the claim fails and the kubelet retries "
                        "(default: %(default)s)")
    p.add_argument("--mac-prefix", type=_mac_prefix, default=port_mac.parse_prefix(port_mac.DEFAULT_PREFIX),
                   metavar="OCTETS",
                   help="leading octets of the MACs the plugin generates for VM interfaces without a "
                        "macAddress; locally administered unicast (default: %s)" % port_mac.DEFAULT_PREFIX)
    p.add_argument("--metrics-listen", default="", metavar="HOST:PORT",
                   help="serve Prometheus metrics at http://HOST:PORT/metrics (HOST an address, "
                        "IPv6 with or without brackets); default: none")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--log-format", default="text", choices=log_setup.FORMATS,
                   help="json: one JSON object per line, with the claim's namespace, name and VM "
                        "where an event concerns one (default: %(default)s)")
    return p


def parse(argv=None):
    p = parser()
    o = p.parse_args(argv)
    if not o.node_name:
        p.error("--node-name (or $NODE_NAME) is required")
    try:
        names.dns_subdomain("--node-name", o.node_name)
    except names.InvalidName as e:
        p.error(str(e))
    for flag in ("kubelet_root", "socket_root", "cdi_root", "container_socket_root"):
        value = getattr(o, flag)
        if not os.path.isabs(value):
            p.error(f"--{flag.replace('_', '-')} {value!r} is not an absolute path")
        setattr(o, flag, os.path.normpath(value))
    longest = len(os.fsencode(o.socket_root)) + 1 + KEY_HEX + 1 + len(SOCKET_FILE)
    if longest > SUN_PATH_MAX:
        p.error(f"--socket-root {o.socket_root!r} is too long: <dir>/vhost.sock would be {longest} "
                f"bytes, sun_path holds {SUN_PATH_MAX}")
    if o.ports_capacity < 1:
        p.error("--ports-capacity must be at least 1")
    if not 1 <= o.ports_per_uplink <= resource_slice.MAX_SLOTS:
        p.error(f"--ports-per-uplink must be from 1 to {resource_slice.MAX_SLOTS}")
    if not 68 <= o.default_mtu <= 9000:
        p.error("--default-mtu must be from 68 to 9000")
    if o.metrics_listen:
        try:
            metrics_server.parse_listen(o.metrics_listen)
        except ValueError as e:
            p.error(f"--metrics-listen {e}")
    if o.socket_grace <= 0:
        p.error("--socket-grace must be positive")
    if o.launcher_wait < 0:
        p.error("--launcher-wait must not be negative")
    if o.reconcile_interval <= 0:
        p.error("--reconcile-interval must be positive")
    o.plugin_dir = os.path.join(o.kubelet_root, "plugins", DRIVER_NAME)
    o.state_dir = os.path.abspath(o.state_dir or os.path.join(o.plugin_dir, "state"))
    return o
