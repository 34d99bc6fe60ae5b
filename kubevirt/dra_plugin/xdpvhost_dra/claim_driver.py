"""NodePrepareResources and NodeUnprepareResources for one claim at a time,
and the reconcile pass that puts back what is missing after a restart of
the plugin or of the daemon. One lock serialises them all (as the Go
kubelet plugin helper does), across the instances of a rolling update too
(node_lock.py).

prepare: state record (phase preparing) -> socket directory -> port.add
(client mode, the socket QEMU will create, mac_policy fixed with the MAC
port_mac gives it, owner labels)
-> CDI spec of the socket directory -> device metadata and its CDI spec ->
record phase prepared -> claim status.devices (best effort).
unprepare: port.remove -> socket directory -> metadata and CDI specs ->
record deleted. Both are idempotent: a repeated prepare of a prepared claim
checks that everything is still in place and answers the same devices."""

import logging
import time

from . import (DRIVER_NAME, atomic_file, cdi, claim_plan, device_metadata, launcher, log_setup, names,
               plugin_metrics, port_mac, vmi_queues)
from .node_lock import NodeLock
from .daemon_control import NAME_IN_USE, DaemonError, DaemonUnavailable
from .kube_api import ApiError
from .socket_dir import SocketDirError

log = logging.getLogger("xdpvhost-dra.claims")


class Failure(RuntimeError):
    """A per-claim failure: its message is the claim's error for the kubelet;
    its reason one of plugin_metrics.REASONS."""

    def __init__(self, message, reason):
        super().__init__(message)
        self.reason = reason


_REASONS = ((names.InvalidName, "invalid_request"), (claim_plan.ClaimError, "claim"),
            (ApiError, "api_server"), (DaemonUnavailable, "daemon_unavailable"),
            (DaemonError, "daemon_refused"), (SocketDirError, "socket_dir"), (OSError, "filesystem"))


def reason_of(error):
    """Why a call failed, as plugin_metrics.REASONS names it."""
    if isinstance(error, Failure):
        return error.reason
    return next((reason for kind, reason in _REASONS if isinstance(error, kind)), "internal")


def _counted(call, started, error):
    plugin_metrics.call_seconds.labels(call, "error" if error else "ok").observe(time.monotonic() - started)
    if error is not None:
        plugin_metrics.call_errors.labels(call, reason_of(error)).inc()


def port_params(record, p):
    """port.add's params. A record written before ports got a MAC from
    orchestration (no "mac") keeps the learning port it had."""
    claim = record["claim"]
    mac = {"mac_policy": "fixed", "mac": p["mac"]} if p.get("mac") else {"mac_policy": "learn"}
    return {
        "name": p["port"], "socket": p["socket"], "mode": "client", "uplink": p["uplink"],
        "mtu": p["mtu"], "queues": p["queues"], **mac,
        "owner": {"namespace": claim["namespace"], "vm": record.get("vm") or "", "claim": claim["name"]},
    }


class ClaimDriver:
    def __init__(self, options, daemon, api, sockets, store, devices):
        self.o = options
        self.daemon = daemon
        self.api = api
        self.sockets = sockets
        self.store = store
        self.devices = devices  # callable -> {device name: UplinkDevice}
        self.lock = NodeLock(store.directory)
        self._orphans_logged = set()
        self._memory_refused = set()  # ports whose refused guest memory was reported

    # ---- kubelet calls ---------------------------------------------------

    def prepare(self, namespace, name, claim_uid):
        """Returns (devices, error): devices as dicts of the kubelet's Device."""
        what = f"claim {namespace}/{name} ({claim_uid})"
        started = time.monotonic()
        try:
            names.dns_label("claim namespace", namespace)
            names.dns_subdomain("claim name", name)
            names.uid("claim UID", claim_uid)
        except names.InvalidName as e:
            log.error("prepare %s refused: %s", what[:200], e)
            _counted("prepare", started, e)
            return [], str(e)
        with self.lock, log_setup.context(namespace=namespace, claim=name):
            try:
                devices = self._prepare(namespace, name, claim_uid)
                log.info("prepare %s: done, devices %s", what,
                         ", ".join(f"{d['device_name']} for {d['request_names'][0]}" for d in devices)
                         or "none of this driver")
                _counted("prepare", started, None)
                return devices, ""
            except (Failure, claim_plan.ClaimError, ApiError, DaemonUnavailable, DaemonError,
                    SocketDirError, OSError) as e:
                log.error("prepare %s failed: %s", what, e)
                _counted("prepare", started, e)
                return [], str(e)
            finally:
                self._count_prepared()

    def unprepare(self, namespace, name, claim_uid):
        what = f"claim {namespace}/{name} ({claim_uid})"
        started = time.monotonic()
        try:
            names.uid("claim UID", claim_uid)
        except names.InvalidName as e:
            log.error("unprepare %s refused: %s", what[:200], e)
            _counted("unprepare", started, e)
            return str(e)
        with self.lock, log_setup.context(namespace=namespace, claim=name):
            try:
                record = self.store.load(claim_uid)
                if record is not None:
                    log_setup.add_context(vm=record.get("vm"))
                if record is None:
                    log.info("unprepare %s: not prepared by this plugin; nothing to do", what)
                    _counted("unprepare", started, None)
                    return ""
                self._teardown(record)
                self.store.delete(claim_uid)
                log.info("unprepare %s: done", what)
                self._clear_status(record)
                _counted("unprepare", started, None)
                return ""
            except (Failure, DaemonUnavailable, DaemonError, OSError, RuntimeError) as e:
                log.error("unprepare %s failed (state kept, the kubelet retries): %s", what, e)
                _counted("unprepare", started, e)
                return str(e)
            finally:
                self._count_prepared()

    def _count_prepared(self, records=None):
        try:
            records = self.store.all() if records is None else records
        except OSError:
            return
        plugin_metrics.prepared_claims.set(sum(r.get("phase") == "prepared" for r in records))

    # ---- prepare ---------------------------------------------------------

    def _prepare(self, namespace, name, claim_uid):
        record = self.store.load(claim_uid)
        if record is not None:
            same = (record["claim"]["namespace"], record["claim"]["name"]) == (namespace, name)
            if not same:
                raise Failure(f"claim UID {claim_uid} was prepared as {record['claim']['namespace']}/"
                              f"{record['claim']['name']}, not {namespace}/{name}", "claim")
            if record.get("phase") == "prepared":
                self._ensure(record, why="prepare repeated")
                return claim_plan.prepared_devices(record)
            log.info("claim %s/%s: an earlier prepare did not finish; undoing it first", namespace, name)
            self._teardown(record)
            self.store.delete(claim_uid)

        claim = self.api.get_claim(namespace, name)
        record = claim_plan.plan(claim, (namespace, name, claim_uid), self.o.node_name,
                                 self.devices(), self.sockets, self.o.container_socket_root,
                                 self.o.plugin_dir, self.o.cdi_root)
        vm, vmi = self._launcher(claim, namespace)
        record["vm"] = vm
        log_setup.add_context(vm=vm)
        self._vm_queues(record, vmi)
        pod = claim_plan.reserving_pod(claim)
        if pod is not None:  # socket_watch reads it while the VM's socket is missing
            record["pod"] = {"name": pod[0], "uid": pod[1]}
        for p in record["ports"]:
            p["mac"] = self._port_mac(record, p, vmi)
        record["phase"] = "preparing"
        record["prepared_at"] = time.time_ns()  # the newest claim of a name owns its metadata path
        self.store.save(record)
        self._ensure(record, why="prepare")
        record["phase"] = "prepared"
        self.store.save(record)
        self._write_status(record)
        return claim_plan.prepared_devices(record)

    def _launcher(self, claim, namespace):
        """(VM name, VMI object or None) of the pod the claim is reserved
        for, found from the pod's name and UID alone (launcher.py). The VMI
        is read for its interfaces' MACs; when the pod is named as a
        launcher and no VMI lists it here, that is the claim's error (the
        kubelet retries). A pod not named as a launcher runs no VM: ""."""
        ref = claim_plan.reserving_pod(claim)
        if ref is None:
            return "", None
        pod_name, pod_uid = ref
        try:
            names.dns_subdomain("reservedFor pod name", pod_name)
            return launcher.find(self.api, namespace, pod_name, pod_uid, self.o.node_name,
                                 wait_s=self.o.launcher_wait)
        except names.InvalidName as e:
            log.info("claim's pod %s/%s: %s; VM name unknown", namespace, pod_name, e)
            return "", None
        except (launcher.LauncherError, ApiError) as e:
            raise Failure(f"pod {namespace}/{pod_name}: its VMI, whose interfaces give the ports "
                          f"their MACs, cannot be read: {e}", "vmi") from e

    @staticmethod
    def _vm_queues(record, vmi):
        """A port whose claim sets no queues gets as many queue pairs as its
        VM's NIC has (vmi_queues: one per vCPU with
        networkInterfaceMultiqueue), up to the daemon's ceiling, so that
        QEMU never asks for more than the port offers."""
        if vmi is None:
            return
        claim = record["claim"]
        try:
            wanted = vmi_queues.queue_pairs(vmi.get("spec"))
        except ValueError as e:
            raise Failure(f"VMI {claim['namespace']}/{record['vm']}: {e}", "vmi") from e
        for p in record["ports"]:
            if p["queues_from"] == "default" and p["queues"] != wanted:
                p["queues"] = min(wanted, claim_plan.MAX_QUEUES)
                p["queues_from"] = "vm"
                log.info("port %s: %d queue pairs, as VM %s/%s's NIC has (its claim sets none)",
                         p["port"], p["queues"], claim["namespace"], record["vm"])

    def _port_mac(self, record, p, vmi):
        """The port's MAC (port_mac): the VMI interface's macAddress, else
        generated from the VM (or the claim) and the request."""
        claim = record["claim"]
        try:
            found = port_mac.from_vmi(vmi, claim["name"], record["pod_claim_name"], record["from_template"],
                                      p["request"]) if vmi is not None else None
        except port_mac.MacError as e:
            raise Failure(f"claim {claim['namespace']}/{claim['name']}: request {p['request']}: {e}",
                          "mac") from e
        if found is not None and found[1] is not None:
            log.info("port %s: MAC %s, the macAddress of VMI %s/%s interface %s", p["port"], found[1],
                     claim["namespace"], record["vm"], found[0])
            return found[1]
        mac = port_mac.generated(self.o.mac_prefix, claim["namespace"], record["vm"],
                                 record["pod_claim_name"], p["request"], claim["uid"])
        log.info("port %s: MAC %s, generated for %s", p["port"], mac,
                 f"VM {claim['namespace']}/{record['vm']}" if record["vm"] else f"claim {claim['uid']}")
        return mac

    def _ensure(self, record, why, records=None):
        """Makes everything the record describes exist: directories, daemon
        ports, CDI specs, metadata. Logs what it had to (re)create and
        returns it (plugin_metrics.REPAIRS, once each). records: every
        claim's record (read here if not given)."""
        claim = record["claim"]
        what = f"claim {claim['namespace']}/{claim['name']}"
        made = []
        if records is None:
            records = self.store.all()
        for p in record["ports"]:
            if self.sockets.ensure(p["key"], why):
                made.append("socket_dir")
            if self._ensure_port(record, p, why):
                made.append("port")
            doc = device_metadata.document(
                claim["namespace"], claim["name"], claim["uid"], record["pod_claim_name"],
                record["from_template"], p["request_full"],
                [{"pool": p["pool"], "name": p["device"], "attributes": {
                    "vhost-user-path": {"string": p["container_socket"]}, "mtu": {"int": p["mtu"]},
                    "queues": {"int": p["queues"]}},
                  "networkData": {"hardwareAddress": p["mac"]} if p.get("mac") else None}])
            if not self._newer_claim_names(record, p["metadata_file"], records) and \
                    device_metadata.write(p["metadata_file"], doc):
                made.append("metadata")
                log.info("%s (%s): device metadata %s written (vhost-user-path %s, mtu %d; in the pod "
                         "at %s)", what, why, p["metadata_file"], p["container_socket"], p["mtu"],
                         p["metadata_container_file"])
            spec = cdi.metadata_spec(claim["uid"], p["request"], p["metadata_file"],
                                     p["metadata_container_file"])
            if cdi.write(p["metadata_spec"], spec):
                made.append("cdi_spec")
                log.info("%s (%s): CDI spec %s written", what, why, p["metadata_spec"])
        spec = cdi.vhost_spec(claim["uid"], [(p["device"], p["request"], p["dir"], p["container_dir"])
                                             for p in record["ports"]])
        if record["ports"] and cdi.write(record["vhost_spec"], spec):
            made.append("cdi_spec")
            log.info("%s (%s): CDI spec %s written (mounts %s)", what, why, record["vhost_spec"],
                     ", ".join(f"{p['dir']} at {p['container_dir']}" for p in record["ports"]))
        return sorted(set(made))

    @staticmethod
    def _newer_claim_names(record, metadata_file, records):
        """Whether a claim prepared after this one names the same metadata
        file: the path is by claim name, and a claim deleted and made again
        under its name (a VM re-created) may be prepared before the old one
        is unprepared. The file is the newer claim's; the old claim leaves
        it alone (and its unprepare does not remove it, device_metadata)."""
        mine = record.get("prepared_at", 0)
        return any(
            other["claim"]["uid"] != record["claim"]["uid"] and other.get("phase") == "prepared"
            and other.get("prepared_at", 0) > mine
            and any(q.get("metadata_file") == metadata_file for q in other.get("ports", []))
            for other in records)

    def _ensure_port(self, record, p, why):
        params = port_params(record, p)
        current = self.daemon.port(p["port"])
        if current is not None:
            if current.get("socket") == p["socket"] and current.get("mode") == "client":
                self._report_memory_refusal(record, p, current.get("memory_refused"))
                return False
            log.info("port %s: the daemon has it with socket %s mode %s; replacing it",
                     p["port"], current.get("socket"), current.get("mode"))
            self.daemon.remove_port(p["port"])
        try:
            self.daemon.add_port(params)
        except DaemonError as e:
            if e.code != NAME_IN_USE:
                raise Failure(f"xdpvhostd refused port {p['port']} for request {p['request']} "
                              f"(uplink {p['uplink']}, socket {p['socket']}): {e.message} "
                              f"(code {e.code})", "daemon_refused") from e
            return False  # added by someone else in the meantime: checked next time
        claim = record["claim"]
        log.info("port %s added (%s): client of %s on uplink %s, mtu %d, %d queue pair(s), mac %s, "
                 "owner %s/%s vm %r", p["port"], why, p["socket"], p["uplink"], p["mtu"], p["queues"],
                 p.get("mac") or "learned", claim["namespace"], claim["name"], record.get("vm") or "")
        return True

    def _report_memory_refusal(self, record, p, refusal):
        """The daemon refused the VM's guest memory (port.get's
        memory_refused): said once, with the VM, until it takes memory again."""
        claim = record["claim"]
        if refusal and p["port"] not in self._memory_refused:
            self._memory_refused.add(p["port"])
            log.warning("VM %s/%s (claim %s), port %s: xdpvhostd refused the guest's memory (%s): the "
                        "VM has no traffic on this interface. Its domain needs memfd or hugepage "
                        "memory (the binding sidecar sets memfd where the domain names no source)",
                        claim["namespace"], record.get("vm") or "?", claim["name"], p["port"], refusal)
        elif not refusal and p["port"] in self._memory_refused:
            self._memory_refused.discard(p["port"])
            log.info("VM %s/%s, port %s: the guest's memory is mapped now", claim["namespace"],
                     record.get("vm") or "?", p["port"])

    # ---- unprepare -------------------------------------------------------

    def _teardown(self, record):
        claim = record["claim"]
        for p in record["ports"]:
            if self.daemon.remove_port(p["port"]):
                log.info("port %s removed", p["port"])
            self.sockets.remove(p["key"])
            if device_metadata.remove(self.o.plugin_dir, claim["namespace"], claim["name"], p["request"],
                                      claim["uid"]):
                log.info("device metadata %s removed", p["metadata_file"])
        for path in [record["vhost_spec"]] + [p["metadata_spec"] for p in record["ports"]]:
            if atomic_file.remove(path):
                log.info("CDI spec %s removed", path)

    # ---- claim status (debug information, best effort) -------------------

    def _status_entries(self, record):
        entries = []
        for p in record["ports"]:
            e = {"driver": DRIVER_NAME, "pool": p["pool"], "device": p["device"]}
            if p.get("share_id"):
                e["shareID"] = p["share_id"]
            if p.get("mac"):
                e["networkData"] = {"hardwareAddress": p["mac"]}
            e["data"] = {
                "mount": {"hostDir": p["dir"], "containerDir": p["container_dir"]},
                "socket": {"hostPath": p["socket"], "containerPath": p["container_socket"]},
                "uplink": p["uplink"], "port": p["port"],
                "cdiDeviceID": [cdi.device_id(cdi.VHOST_KIND, cdi.vhost_device_name(
                    record["claim"]["uid"], p["device"], p["request"]))],
            }
            entries.append(e)
        return entries

    def _update_status(self, record, entries, what):
        claim = record["claim"]
        for attempt in range(3):
            try:
                obj = self.api.get_claim(claim["namespace"], claim["name"])
                if (obj.get("metadata") or {}).get("uid") != claim["uid"]:
                    return
                status = obj.setdefault("status", {})
                others = [d for d in status.get("devices") or [] if d.get("driver") != DRIVER_NAME]
                if not entries and len(others) == len(status.get("devices") or []):
                    return
                status["devices"] = others + entries
                if not status["devices"]:
                    del status["devices"]
                self.api.replace_claim_status(claim["namespace"], claim["name"], obj)
                log.info("claim %s/%s: status.devices %s", claim["namespace"], claim["name"], what)
                return
            except ApiError as e:
                if e.status == 409 and attempt < 2:
                    continue
                if e.status == 404 and not entries:
                    log.info("claim %s/%s is gone: no status.devices to clear", claim["namespace"],
                             claim["name"])
                    return
                log.warning("claim %s/%s: status.devices not %s: %s", claim["namespace"],
                            claim["name"], what, e)
                return

    def _write_status(self, record):
        if record["ports"]:
            self._update_status(record, self._status_entries(record), "written")

    def _clear_status(self, record):
        if record["ports"]:
            self._update_status(record, [], "cleared")

    # ---- reconcile -------------------------------------------------------

    def reconcile(self):
        """Puts back what prepared claims need; returns (ok, failed) counts."""
        ok = failed = 0
        with self.lock:
            records = self.store.all()
            for record in records:
                if record.get("phase") != "prepared":
                    continue
                claim = record["claim"]
                with log_setup.context(namespace=claim["namespace"], claim=claim["name"], vm=record.get("vm")):
                    try:
                        for what in self._ensure(record, why="reconcile", records=records):
                            plugin_metrics.reconcile_repairs.labels(what).inc()
                        ok += 1
                    except (Failure, DaemonUnavailable, DaemonError, SocketDirError, OSError) as e:
                        failed += 1
                        plugin_metrics.reconcile_failures.inc()
                        log.error("reconcile claim %s/%s: %s", claim["namespace"], claim["name"], e)
            self._count_prepared(records)
            self._log_orphans()
        return ok, failed

    def _log_orphans(self):
        """Ports named like the plugin's that no state file knows (a lost
        --state-dir, or a second plugin on one daemon): reported, not touched."""
        try:
            ports = self.daemon.ports()
        except (DaemonUnavailable, DaemonError):
            return
        known = {p["port"] for r in self.store.all() for p in r["ports"]}
        for port in ports:
            name = port.get("name", "")
            if name.startswith(names.PORT_PREFIX) and name not in known and name not in self._orphans_logged:
                self._orphans_logged.add(name)
                log.warning("port %s (socket %s) on the daemon looks like this plugin's but no state file "
                            "in %s knows it; left alone", name, port.get("socket"), self.store.directory)
