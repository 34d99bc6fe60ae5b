"""Whether each prepared claim's socket directory reached its VM.

The directory gets into the VM's pod only through the CDI device the
plugin names in its prepare answer. A container runtime that does not
apply CDI devices (containerd 1.7 with `enable_cdi = false`, its default;
CRI-O before 1.23) starts the pod without the mount, silently: QEMU then
creates its vhost-user socket inside the container, the daemon's client
port never finds it, and the VM runs with its link down.

So once the VM's QEMU in this claim's pod has been running for `grace_s`
and a port's socket is still missing from the host directory, the claim
is reported, once: a warning in the log, a Warning Event on the pod, and
the gauge xdpvhost_dra_claims_without_socket. When the socket appears,
that is logged too. When QEMU started is read from the VM's VMI, not the
pod (the plugin reads no pods, launcher.py): for a migration's target pod
when the migration began, else when the VMI entered phase Running on this
node. The VMI is read at most once a RECHECK_S per claim, and only while
its socket is missing."""

import datetime
import logging
import os
import time

from . import launcher, log_setup, plugin_metrics
from .kube_api import ApiError

log = logging.getLogger("xdpvhost-dra.sockets")

GRACE_S = 120.0
RECHECK_S = 60.0


def _timestamp(text):
    try:
        return datetime.datetime.fromisoformat(text).timestamp() if isinstance(text, str) else None
    except ValueError:
        return None


def running_since(vmi, pod_name, pod_uid, node):
    """When QEMU started in pod `pod_name` of the VMI on `node` (seconds
    since the epoch), or None while it does not run there (as far as the
    VMI tells)."""
    status = vmi.get("status") or {}
    if launcher.active_node(vmi, pod_uid) != node:
        return None
    migration = status.get("migrationState") or {}
    if migration.get("targetPod") == pod_name:
        return _timestamp(migration.get("startTimestamp"))
    if status.get("nodeName") != node or status.get("phase") != "Running":
        return None
    return next((_timestamp(t.get("phaseTransitionTimestamp"))
                 for t in status.get("phaseTransitionTimestamps") or []
                 if isinstance(t, dict) and t.get("phase") == "Running"), None)


class SocketWatch:
    def __init__(self, api, node, grace_s=GRACE_S, clock=time.monotonic, wall=time.time):
        self.api = api
        self.node = node  # node_events.Node: Events
        self.grace_s = grace_s
        self._clock, self._wall = clock, wall
        self._read_at = {}  # claim uid -> when its pod was last read
        self.missing = {}   # claim uid -> the sockets reported missing

    def check(self, records):
        prepared = [r for r in records if r.get("phase") == "prepared" and r.get("pod") and r.get("vm")]
        for record in prepared:
            claim = record["claim"]
            with log_setup.context(namespace=claim["namespace"], claim=claim["name"], vm=record.get("vm")):
                self._check(record)
        uids = {r["claim"]["uid"] for r in prepared}
        for uid in set(self._read_at) - uids:
            del self._read_at[uid]
        for uid in set(self.missing) - uids:
            del self.missing[uid]
        plugin_metrics.claims_without_socket.set(len(self.missing))

    def _check(self, record):
        claim, pod_ref = record["claim"], record["pod"]
        uid = claim["uid"]
        absent = [p["socket"] for p in record["ports"] if not os.path.exists(p["socket"])]
        if not absent:
            if self.missing.pop(uid, None) is not None:
                log.info("claim %s/%s: the VM's socket is there now", claim["namespace"], claim["name"])
            self._read_at.pop(uid, None)
            return
        now = self._clock()
        if uid in self.missing or now - self._read_at.get(uid, now - RECHECK_S) < RECHECK_S:
            return
        self._read_at[uid] = now
        try:
            vmi = self.api.vmi(claim["namespace"], record["vm"])
        except ApiError as e:
            log.debug("claim %s/%s: VMI %s: %s", claim["namespace"], claim["name"], record["vm"], e)
            return
        since = running_since(vmi, pod_ref["name"], pod_ref.get("uid"), self.node.name)
        if since is None or self._wall() - since < self.grace_s:
            return
        self.missing[uid] = absent
        message = (f"The vhost-user socket of claim {claim['name']} ({', '.join(absent)} on the node) "
                   f"did not appear {int(self._wall() - since)} s after the VM's QEMU started: the "
                   "container runtime did not mount the claim's directory, so the VM's link stays down. "
                   "The runtime must apply CDI devices: containerd 1.7 needs enable_cdi = true (and "
                   "cdi_spec_dirs) in its CRI plugin config; containerd 2.0 and CRI-O 1.23 or newer do "
                   "by default.")
        log.warning("claim %s/%s, pod %s: %s", claim["namespace"], claim["name"], pod_ref["name"], message)
        self.node.pod_event(claim["namespace"], pod_ref["name"], pod_ref.get("uid"), "Warning",
                            "VhostUserSocketMissing", message)
