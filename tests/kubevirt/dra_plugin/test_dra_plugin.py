#!/usr/bin/python3
"""The DRA kubelet plugin (kubevirt/dra_plugin) driven as the kubelet drives
it: over gRPC on its unix sockets under a temporary kubelet root, against a
real xdpvhostd with a veth uplink in a network namespace (node_lab.py). The
Kubernetes API server is the one stand-in (apiserver_standin.py); every
object the plugin sends it is validated against the resource.k8s.io/v1
OpenAPI schema (made strict) in tests/kubevirt/schemas.

Suites (--suite):
  base    registration, ResourceSlice, per-claim errors, unknown claims,
          the daemon going away: runs with any daemon.
  ports   prepare/unprepare with the daemon's fixed-MAC client port, the
          MAC through the sidecar into the domain, idempotence, restarts of
          the plugin and of the daemon, 2000 reconcile passes.
  guest   a QEMU guest as virt-launcher starts it (vhost-user server at the
          prepared socket, as uid 107) pings through the uplink: as ports,
          and the guest image (XDPVHOST_GUEST_IMAGE_DIR).
A suite whose prerequisites are missing skips its tests, saying why, and the
script exits 77 (ctest: skipped). Needs root (namespaces, XDP)."""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import unittest
import uuid

import node_lab as lab
from xvtest import admission, procfs
import api_objects as objs
from apiserver_slices import KUBE_1_35_GATES, canonical_quantity
from apiserver_standin import RecordedApiServer

import jsonschema
import posix1e  # python3-pylibacl

with open(os.path.join(objs.SCHEMAS, "cdi-spec.schema.json")) as f:
    CDI_SCHEMA = jsonschema.Draft202012Validator(json.load(f))
with open(os.path.join(objs.SCHEMAS, "device-metadata.schema.json")) as f:
    METADATA_SCHEMA = jsonschema.Draft202012Validator(json.load(f))

NS = "default"
RESERVED_MAC = "52:54:00:d4:a0:01"  # the guest's MAC (guest suite)
GUEST_IP = "10.77.13.2"


def needs_root():
    return unittest.skipUnless(os.geteuid() == 0, "needs root for namespaces and XDP")


# Run as another user: binds a unix socket with libvirt's QEMU umask (002),
# or connects to one; prints OK or the errno name.
SOCKET_AS = r"""
import errno, os, socket, sys
what, path = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    if what == "bind":
        os.umask(0o002)
        s.bind(path)
        s.listen(1)
        print("OK", flush=True)
        sys.stdin.read()
    else:
        s.connect(path)
        print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
"""
ACL_UID = 10001    # a daemon that is neither root nor in group 107
OTHER_UID = 10003  # anyone else


def socket_as(uid, gid, what, path):
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", lab.PYTHON, "-c",
            SOCKET_AS, what, path]


class PluginTestCase(unittest.TestCase):
    """A fresh node per test: namespaces, daemon, stand-in, plugin."""

    tag = "t"
    plugin_args = ()
    plugin_instance = None  # a rolling-update instance (--rolling-update-uid)
    feature_gates = None  # the stand-in's: Kubernetes 1.36 defaults

    def setUp(self):
        self.net = lab.Network(self.tag)
        self.addCleanup(self.net.delete)
        self.net.create()
        self.dir = lab.make_workdir(self.tag)
        if not os.environ.get("XVDRA_KEEP"):  # XVDRA_KEEP=1 leaves it for a look
            self.addCleanup(shutil.rmtree, self.dir, True)
        self.daemon = lab.start_daemon(os.path.join(self.dir, "daemon"), self.net,
                                       socket_root=os.path.join(self.dir, "sockets"))
        self.addCleanup(self.daemon.kill)
        self.api = RecordedApiServer(netns=self.net.node, feature_gates=self.feature_gates,
                                     cluster_role=lab.plugin_cluster_role()).start()
        self.addCleanup(self.api.stop)
        self.node = self.api.add(objs.node(lab.NODE_NAME))
        kubeconfig = self.api.kubeconfig(os.path.join(self.dir, "kubeconfig"))
        self.kubeconfig = kubeconfig
        self.plugin = lab.Plugin(self.dir, self.net, self.daemon.control_path, kubeconfig,
                                 extra=self.plugin_args, instance=self.plugin_instance)
        self.addCleanup(self.dump_logs_on_failure)
        self.addCleanup(self.plugin.kill)
        self.plugin.start()

    def dump_logs_on_failure(self):
        outcome = getattr(self, "_outcome", None)
        failed = outcome is not None and not outcome.success
        if failed:
            print(f"\n--- plugin log ---\n{self.plugin.tail(80)}\n--- daemon log ---\n{self.daemon.tail(30)}",
                  file=sys.stderr)

    # ---- helpers -----------------------------------------------------------
    def metric(self, name, **labels):
        """One sample of the plugin's /metrics (None if absent)."""
        return lab.scrape(self.net).get((name, tuple(sorted(labels.items()))))

    def wait_passes(self, n, timeout=60):
        """Until the plugin has made `n` more reconcile passes (each lists
        this node's ResourceSlices once)."""
        def passes():
            return len(self.api.sent("GET", r"/resourceslices$"))
        start = passes()
        lab.wait_until(lambda: passes() >= start + n, timeout=timeout, what=f"{n} reconcile passes")

    def state_files(self):
        """The claims' state files (not the instances' lock, .lock)."""
        return [e for e in os.listdir(self.plugin.state_dir) if not e.startswith(".")]

    def published_slice(self, timeout=20):
        lab.wait_until(lambda: self.api.of("resourceslices"), timeout=timeout, what="a ResourceSlice")
        slices = self.api.of("resourceslices")
        self.assertEqual(len(slices), 1, slices)
        return slices[0]

    def seed_claim(self, name, **kw):
        kw.setdefault("node_name", lab.NODE_NAME)
        c = objs.claim(NS, name, **kw)
        self.api.add(c)
        return c

    def seed_vm(self, claim_name="vhost-claim", vm="vm1", mac=None, pod_name=None, **kw):
        """VM `vm`'s VMI (made once; macAddress `mac` on its interface), a
        virt-launcher pod it owns and lists on this node (status.activePods),
        and a claim reserved for that pod."""
        vmi = self.api.get("virtualmachineinstances", vm, NS) or objs.vmi(NS, vm, mac=mac)
        pod = objs.launcher_pod(NS, pod_name or objs.launcher_name(vm, "x7k2p"), vm, vmi)
        self.api.add(objs.run_on(vmi, pod, lab.NODE_NAME))
        return self.seed_claim(claim_name, pod=pod, **kw), pod

    def check_socket_dir_access(self, host_dir):
        """Owner 107:107, and the ACL (group bits of the mode show its mask):
        QEMU (107) makes its socket there with libvirt's umask 002, the ACL's
        user connects to it, another user cannot even reach it."""
        st = os.lstat(host_dir)
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (107, 107, 0o770))
        wanted = ["user::rwx", f"user:{ACL_UID}:rwx", "group::r-x", "mask::rwx", "other::---"]
        for acl in (posix1e.ACL(file=host_dir), posix1e.ACL(filedef=host_dir)):
            self.assertEqual(acl.to_any_text(options=posix1e.TEXT_NUMERIC_IDS).decode().split(), wanted)
        sock = os.path.join(host_dir, "vhost.sock")
        qemu = subprocess.Popen(socket_as(107, 107, "bind", sock), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(qemu.stdout.readline().strip(), "OK")
            ok = subprocess.run(socket_as(ACL_UID, ACL_UID, "connect", sock), capture_output=True, text=True)
            self.assertEqual(ok.stdout.strip(), "OK", ok.stderr)
            other = subprocess.run(socket_as(OTHER_UID, OTHER_UID, "connect", sock), capture_output=True,
                                   text=True)
            self.assertEqual(other.stdout.strip(), "EACCES", other.stderr)
        finally:
            qemu.stdin.close()
            qemu.wait(10)

    def check_prepared(self, c, pod, answer, queues=1):
        uid = c["metadata"]["uid"]
        self.assertEqual(answer.error, "")
        self.assertEqual(len(answer.devices), 1)
        dev = answer.devices[0]
        self.assertEqual(list(dev.request_names), ["vhost-port"])
        self.assertEqual((dev.pool_name, dev.device_name), (lab.NODE_NAME, "up0"))
        self.assertEqual(list(dev.cdi_device_ids), [f"xdpvhost.io/vhost-user={uid}-up0-vhost-port",
                                                    f"xdpvhost.io/metadata={uid}_vhost-port"])
        # The socket directory: owner 107:107 (QEMU in virt-launcher), mode 0750.
        dirs = os.listdir(self.plugin.socket_root)
        self.assertEqual(len(dirs), 1)
        host_dir = os.path.join(self.plugin.socket_root, dirs[0])
        st = os.lstat(host_dir)
        self.assertTrue(stat.S_ISDIR(st.st_mode))
        self.assertEqual((st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)), (107, 107, 0o750))
        host_socket = os.path.join(host_dir, "vhost.sock")
        self.assertLess(len(host_socket.encode()), 108)
        # The daemon has the client port on that socket.
        port = self.port_on(host_socket)
        self.assertEqual(port["mode"], "client")
        self.assertEqual(port["uplink"], "up0")
        self.assertEqual(port["mtu"], lab.UPLINK_MTU)
        self.assertEqual(port["queue_pairs"], queues)
        self.assertEqual(port["owner"], {"namespace": NS, "vm": "vm1", "claim": c["metadata"]["name"]})
        # Its MAC comes from orchestration (the plugin), never from the guest.
        self.assertEqual((port["mac_policy"], port["mac_source"]), ("fixed", "config"), port)
        self.assertRegex(port["mac"], r"^02(:[0-9a-f]{2}){5}$", "locally administered, --mac-prefix 02")
        # The socket directory's CDI spec.
        container_dir = "/var/run/xdpvhost/vhost/vhost-port"
        spec = self.cdi_spec(f"xdpvhost.io-vhost-user_{uid}.json")
        self.assertEqual(spec["cdiVersion"], "0.6.0")
        self.assertEqual(spec["kind"], "xdpvhost.io/vhost-user")
        self.assertEqual(spec["devices"], [{"name": f"{uid}-up0-vhost-port", "containerEdits": {"mounts": [
            {"hostPath": host_dir, "containerPath": container_dir, "options": ["bind", "rw"]}]}}])
        # The metadata file and its CDI spec.
        md_file = os.path.join(self.plugin.kubelet_root, "plugins", "xdpvhost.io", "dra-device-metadata",
                               f"{NS}_{c['metadata']['name']}", "vhost-port", "metadata.json")
        mspec = self.cdi_spec(f"xdpvhost.io_metadata_{uid}_vhost-port.json")
        self.assertEqual(mspec["cdiVersion"], "0.5.0")
        self.assertEqual(mspec["kind"], "xdpvhost.io/metadata")
        self.assertEqual(mspec["devices"], [{"name": f"{uid}_vhost-port", "containerEdits": {"mounts": [{
            "hostPath": md_file,
            "containerPath": "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/vhost/"
                             "vhost-port/xdpvhost.io-metadata.json",
            "options": ["ro", "bind"]}]}}])
        self.assertEqual(stat.S_IMODE(os.stat(md_file).st_mode), 0o644)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(md_file)).st_mode), 0o755)
        docs = self.metadata_stream(md_file)
        self.assertEqual(len(docs), 1)
        doc = docs[0]
        self.assertEqual(doc["metadata"], {"name": c["metadata"]["name"], "namespace": NS, "uid": uid,
                                           "generation": 1})
        self.assertEqual(doc["podClaimName"], "vhost")
        attrs = doc["requests"][0]["devices"][0]["attributes"]
        self.assertEqual(doc["requests"][0]["name"], "vhost-port")
        self.assertEqual(doc["requests"][0]["devices"][0]["driver"], "xdpvhost.io")
        self.assertEqual(attrs, {"vhost-user-path": {"string": container_dir + "/vhost.sock"},
                                 "mtu": {"int": lab.UPLINK_MTU}, "queues": {"int": queues}})
        self.assertEqual(doc["requests"][0]["devices"][0]["networkData"], {"hardwareAddress": port["mac"]})
        for k, v in attrs.items():
            self.assertEqual(objs.attribute_errors(k, v), [])
        return host_dir, port

    def port_on(self, socket_path):
        ports = [p for p in self.daemon.call("port.list") if p["socket"] == socket_path]
        self.assertEqual(len(ports), 1, self.daemon.call("port.list"))
        return self.daemon.call("port.get", name=ports[0]["name"])

    def cdi_spec(self, name):
        with open(os.path.join(self.plugin.cdi_root, name)) as f:
            spec = json.load(f)
        errors = [e.message for e in CDI_SCHEMA.iter_errors(spec)]
        self.assertEqual(errors, [], name)
        return spec

    def metadata_stream(self, path):
        """The file is a JSON stream: objects, each followed by a newline."""
        with open(path) as f:
            text = f.read()
        self.assertTrue(text.endswith("\n"))
        decoder, docs, i = json.JSONDecoder(), [], 0
        while i < len(text):
            if text[i].isspace():
                i += 1
                continue
            doc, i = decoder.raw_decode(text, i)
            self.assertEqual([e.message for e in METADATA_SCHEMA.iter_errors(doc)], [])
            docs.append(doc)
        return docs

    def check_gone(self, c, host_dir, port_name):
        uid = c["metadata"]["uid"]
        self.assertIsNone(self.port_or_none(port_name))
        self.assertFalse(os.path.exists(host_dir))
        self.assertEqual(os.listdir(self.plugin.cdi_root), [])
        self.assertFalse(os.path.exists(os.path.join(self.plugin.kubelet_root, "plugins", "xdpvhost.io",
                                                     "dra-device-metadata", f"{NS}_{c['metadata']['name']}")))
        self.assertFalse(os.path.exists(os.path.join(self.plugin.state_dir, f"{uid}.json")))

    def port_or_none(self, name):
        try:
            return self.daemon.call("port.get", name=name)
        except lab.RpcError as e:
            if e.code == -32002:  # not_found
                return None
            raise

    def assert_sent_objects_valid(self):
        """Every body the plugin sent the API server fits the strict schema,
        and every write of a ResourceSlice or a claim's status passes the
        admission policies that keep a plugin to its node
        (deploy/kubernetes/base/admission-policy.yaml)."""
        self.assert_writes_admitted()
        sent = self.api.sent("POST") + self.api.sent("PUT") + self.api.sent("PATCH")
        for r in sent:
            body = r["body"]
            if body.get("kind") == "Event":
                self.assertEqual(objs.event_errors(body), [], f"{r['method']} {r['path']}")
                continue
            errors = objs.schema_errors(body)
            if body.get("kind") == "ResourceSlice":
                errors += objs.slice_prose_errors(body)
            self.assertEqual(errors, [], f"{r['method']} {r['path']}: {errors}")
        return sent


    def assert_writes_admitted(self):
        requests = []
        for i, r in enumerate(self.api.requests):
            m = re.match(r"^/apis/resource\.k8s\.io/v1/(?:namespaces/[^/]+/)?(resourceslices|resourceclaims)"
                         r"(?:/[^/]+)?(/status)?$", r["path"])
            if not m or r["method"] == "GET" or r["query"].get("dryRun") == "All" or r["status"] >= 400:
                continue
            operation = {"POST": "CREATE", "PUT": "UPDATE", "PATCH": "UPDATE", "DELETE": "DELETE"}[r["method"]]
            requests.append({"name": f"{i} {r['method']} {r['path']}", "operation": operation,
                             "userInfo": admission.plugin_user(lab.NODE_NAME), "group": "resource.k8s.io",
                             "version": "v1", "resource": m.group(1),
                             "subResource": "status" if m.group(2) else "",
                             "object": None if operation == "DELETE" else r["body"],
                             "oldObject": r.get("old")})
        if requests:
            verdicts = admission.verdicts(requests)
            self.assertEqual({k: v for k, v in verdicts.items() if v != "allowed"}, {})


class MacRules(unittest.TestCase):
    """xdpvhost_dra.port_mac's rules, without a node: the prefix flag, the
    VMI's macAddress, the generated MAC's shape."""

    def test_prefix_must_be_locally_administered_unicast(self):
        from xdpvhost_dra import options, port_mac
        o = options.parse(["--node-name", "node-a", "--mac-prefix", "0a:58"])
        self.assertEqual(o.mac_prefix, bytes([0x0a, 0x58]))
        self.assertEqual(options.parse(["--node-name", "node-a"]).mac_prefix, bytes([0x02]))
        for bad in ("00:16:3e", "03", "00", "0a:58:00:01", "zz", ""):
            with self.subTest(bad):
                with self.assertRaises(port_mac.MacError):
                    port_mac.parse_prefix(bad)
        mac = port_mac.generated(bytes([0x0a, 0x58]), "ns", "vm", "vhost", "vhost-port", "uid")
        self.assertRegex(mac, r"^0a:58(:[0-9a-f]{2}){4}$")
        self.assertEqual(mac, port_mac.generated(bytes([0x0a, 0x58]), "ns", "vm", "vhost", "vhost-port",
                                                 "another-claim"), "the VM's, whatever the claim")
        self.assertNotEqual(mac, port_mac.generated(bytes([0x0a, 0x58]), "ns", "vm", "vhost", "other-request",
                                                    "uid"))

    def test_the_vmis_mac_is_checked_and_found_by_claim_and_request(self):
        from xdpvhost_dra import port_mac
        vmi = objs.vmi(NS, "vm1", mac="02-00-00-00-00-AB")
        self.assertEqual(port_mac.from_vmi(vmi, "c", "vhost", True, "vhost-port"), ("fast0", "02:00:00:00:00:ab"))
        self.assertIsNone(port_mac.from_vmi(vmi, "c", "vhost", True, "other"))
        self.assertIsNone(port_mac.from_vmi(vmi, "c", "other", True, "vhost-port"))
        named = objs.vmi(NS, "vm1", mac="02:00:00:00:00:01")
        named["spec"]["resourceClaims"] = [{"name": "vhost", "resourceClaimName": "shared-port"}]
        self.assertEqual(port_mac.from_vmi(named, "shared-port", "shared-port", False, "vhost-port"),
                         ("fast0", "02:00:00:00:00:01"))
        self.assertEqual(port_mac.from_vmi(objs.vmi(NS, "vm1"), "c", "vhost", True, "vhost-port"),
                         ("fast0", None))
        for bad in ("01:00:5e:00:00:01", "00:00:00:00:00:00", "02:00:00:00:00", 7):
            with self.subTest(bad):
                with self.assertRaises(port_mac.MacError) as e:
                    port_mac.from_vmi(objs.vmi(NS, "vm1", mac=bad), "c", "vhost", True, "vhost-port")
                self.assertIn("VMI interface fast0: macAddress", str(e.exception))


class EventNames(unittest.TestCase):
    """xdpvhost_dra.node_events.event_body names an Event after its object,
    without a node: within 253 characters and a DNS-1123 subdomain, however
    long the object's name."""
    SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

    def test_names_fit_whatever_the_objects_name(self):
        from xdpvhost_dra import node_events
        longest_label = "n" * 63
        names = ["node-a", "virt-launcher-vm1-abcde", ".".join([longest_label] * 3) + "." + "m" * 61,
                 "a" * 235 + "-" + "b" * 17, "a" * 235 + "." + "b" * 17, "a" * 236 + "-b"]
        for name in names:
            with self.subTest(len(name)):
                about = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": "u"}
                body = node_events.event_body("node-a", about, "Normal", "Why", "what")
                got = body["metadata"]["name"]
                self.assertLessEqual(len(got), 253)
                self.assertRegex(got, self.SUBDOMAIN)
                base, suffix = got.rsplit(".", 1)
                self.assertRegex(suffix, r"^[0-9a-f]{16}$")
                self.assertTrue(name.startswith(base), got)
                self.assertEqual(objs.event_errors(body), [])
        self.assertEqual(len(node_events.event_body("n", {"name": "x" * 253}, "Normal", "R", "m")
                             ["metadata"]["name"]), 253)


class DeadSockets(unittest.TestCase):
    """plugin_sockets.remove_dead_sockets, without a node: this driver's
    sockets (any instance, both kinds) that nobody listens on go; a live
    one, our own, another driver's, and a file that is no socket stay."""

    def test_only_this_drivers_dead_sockets_go(self):
        import socket as so
        import tempfile
        from xdpvhost_dra import plugin_sockets
        with tempfile.TemporaryDirectory(prefix="xvdra-dead-") as root:
            reg = os.path.join(root, "plugins_registry")
            plug = os.path.join(root, "plugins", "xdpvhost.io")
            os.makedirs(reg)
            os.makedirs(plug)

            def bound(path, listen):
                s = so.socket(so.AF_UNIX, so.SOCK_STREAM)
                s.bind(path)
                if listen:
                    s.listen(1)
                    self.addCleanup(s.close)
                else:
                    s.close()  # the file stays, nobody listens: a killed plugin's
            live_reg, live_dra = (os.path.join(reg, "xdpvhost.io-aaaa-reg.sock"),
                                  os.path.join(plug, "dra-aaaa.sock"))
            dead = [os.path.join(reg, "xdpvhost.io-bbbb-reg.sock"), os.path.join(plug, "dra-bbbb.sock"),
                    os.path.join(reg, "xdpvhost.io-reg.sock"), os.path.join(plug, "dra.sock")]
            own = (os.path.join(reg, "xdpvhost.io-cccc-reg.sock"), os.path.join(plug, "dra-cccc.sock"))
            other = os.path.join(reg, "other.io-reg.sock")
            for path in (live_reg, live_dra):
                bound(path, True)
            for path in dead + list(own) + [other]:
                bound(path, False)
            not_a_socket = os.path.join(reg, "xdpvhost.io-dddd-reg.sock")
            open(not_a_socket, "w").close()
            removed = plugin_sockets.remove_dead_sockets(root, keep=set(own))
            self.assertEqual(sorted(removed), sorted(dead))
            for path in (live_reg, live_dra, *own, other, not_a_socket):
                self.assertTrue(os.path.lexists(path), path)
            self.assertEqual(plugin_sockets.remove_dead_sockets(root, keep=set(own)), [])


@needs_root()
class QueueLimit(unittest.TestCase):
    def test_the_claims_ceiling_is_the_daemons(self):
        from xdpvhost_dra import claim_plan
        proto = os.environ.get("XDPVHOST_PROTO") or os.path.join(lab.ROOT, "proto")
        with open(os.path.join(proto, "config.schema.json")) as f:
            queues = json.load(f)["$defs"]["port"]["properties"]["queues"]
        self.assertEqual(claim_plan.MAX_QUEUES, queues["maximum"])


class Registration(PluginTestCase):
    tag = "reg"

    def test_get_info_and_registration_status(self):
        # The DRA service answers as soon as the registration socket exists
        # (it is started first).
        self.assertEqual(self.plugin.unprepare(), {})
        info = self.plugin.get_info()
        self.assertEqual(info.type, "DRAPlugin")
        self.assertEqual(info.name, "xdpvhost.io")
        self.assertEqual(info.endpoint, self.plugin.dra_socket)
        # Newest first: a kubelet takes the first it supports.
        self.assertEqual(list(info.supported_versions), ["v1.DRAPlugin", "v1beta1.DRAPlugin"])
        # A kubelet of 1.32 or 1.33 calls v1beta1: answered on the same socket,
        # by the wire names of both (an empty request is an empty answer).
        self.assertEqual(self.plugin.unprepare(version="v1beta1"), {})
        for version in ("v1", "v1beta1"):
            for method in ("NodePrepareResources", "NodeUnprepareResources"):
                self.assertEqual(self.plugin.call_dra(
                    f"/k8s.io.kubelet.pkg.apis.dra.{version}.DRAPlugin/{method}"), b"")
        with self.assertRaises(lab.grpc.RpcError) as unknown:
            self.plugin.call_dra("/k8s.io.kubelet.pkg.apis.dra.v1alpha4.DRAPlugin/NodePrepareResources")
        self.assertEqual(unknown.exception.code(), lab.grpc.StatusCode.UNIMPLEMENTED)
        self.plugin.notify(True)
        with self.assertRaises(lab.grpc.RpcError) as refused:
            self.plugin.notify(False, "plugin name taken")
        self.assertIn("plugin name taken", refused.exception.details())
        self.assertIn("kubelet refused the registration: plugin name taken", self.plugin.tail())

    def probe(self, timeout=1.0):
        """The liveness probe as the kubelet runs it in the plugin's container."""
        p = subprocess.run([lab.PYTHON, lab.PLUGIN, "probe", "--kubelet-root", self.plugin.kubelet_root,
                            "--timeout", str(timeout)], capture_output=True, text=True, timeout=60)
        return p.returncode, (p.stdout + p.stderr).strip()

    def test_the_liveness_probe_fails_while_the_plugin_does_not_answer(self):
        self.assertEqual(self.probe(), (0, "alive"))
        # Frozen (a hung gRPC server looks the same to the kubelet): both
        # sockets are there, nothing answers.
        os.kill(self.plugin.proc.pid, signal.SIGSTOP)
        try:
            rc, out = self.probe(timeout=0.5)
            self.assertEqual(rc, 1, out)
            self.assertIn("GetInfo: DEADLINE_EXCEEDED", out)
        finally:
            os.kill(self.plugin.proc.pid, signal.SIGCONT)
        self.assertEqual(self.probe(), (0, "alive"))
        # Stopped: the sockets are gone.
        self.assertEqual(self.plugin.stop(), 0, self.plugin.tail())
        rc, out = self.probe()
        self.assertEqual(rc, 1, out)
        self.assertIn("registration socket", out)
        self.assertIn("UNAVAILABLE", out)

    def test_sigterm_removes_both_sockets(self):
        for path in (self.plugin.dra_socket, self.plugin.reg_socket):
            self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode), path)
        self.assertEqual(self.plugin.stop(), 0, self.plugin.tail())
        self.assertFalse(os.path.exists(self.plugin.reg_socket))
        self.assertFalse(os.path.exists(self.plugin.dra_socket))

    def test_stale_sockets_of_a_killed_plugin_are_replaced(self):
        self.plugin.kill()
        self.assertTrue(os.path.exists(self.plugin.reg_socket))  # left behind by SIGKILL
        self.plugin.start()
        self.assertEqual(self.plugin.get_info().name, "xdpvhost.io")


@needs_root()
class ResourceSlices(PluginTestCase):
    tag = "slice"

    def test_one_shareable_device_per_uplink(self):
        s = self.published_slice()
        self.assert_sent_objects_valid()
        self.assertTrue(s["metadata"]["name"].startswith(f"{lab.NODE_NAME}-xdpvhost.io-"))
        self.assertEqual(s["metadata"]["ownerReferences"][0]["uid"], self.node["metadata"]["uid"])
        self.assertEqual(s["metadata"]["ownerReferences"][0]["kind"], "Node")
        spec = s["spec"]
        self.assertEqual(spec["driver"], "xdpvhost.io")
        self.assertEqual(spec["nodeName"], lab.NODE_NAME)
        self.assertEqual(spec["pool"], {"name": lab.NODE_NAME, "generation": 1, "resourceSliceCount": 1})
        self.assertEqual(len(spec["devices"]), 1)
        d = spec["devices"][0]
        self.assertEqual(d["name"], "up0")
        self.assertIs(d["allowMultipleAllocations"], True)
        self.assertEqual(d["attributes"], {
            "xdpvhost.io/uplink": {"string": "up0"},
            "xdpvhost.io/interface": {"string": lab.NODE_IF},
            "xdpvhost.io/mtu": {"int": lab.UPLINK_MTU},     # the interface's, read in the node's netns
            "xdpvhost.io/maxMtu": {"int": 1774},            # frame_size 2048 - 256 - 18
        })
        self.assertEqual(d["capacity"], {"xdpvhost.io/ports": {
            "value": "256", "requestPolicy": {"default": "1", "validRange": {"min": "1", "step": "1"}}}})
        # Device mode auto asked the server once (a dry run: nothing stored)
        # and, as it keeps a shared device, had nothing to tell the operator.
        self.assertEqual(len(dry_runs(self.api)), 1)
        self.assertEqual(self.api.of("events"), [])

    def test_new_uplink_updates_the_slice_and_a_deleted_slice_comes_back(self):
        first = self.published_slice()
        self.net.add_link("xvdra-n1", "xvdra-p1", mtu=9000)
        self.daemon.call("uplink.add", name="Up_1", interface="xvdra-n1", bind="copy", frame_size=4096)

        def updated():
            s = self.api.of("resourceslices")
            return s and len(s[0]["spec"]["devices"]) == 2 and s[0]
        s = lab.wait_until(updated, timeout=20, what="the slice with two devices")
        self.assertEqual(s["metadata"]["name"], first["metadata"]["name"])
        self.assertEqual(s["spec"]["pool"]["generation"], 2)
        second = [d for d in s["spec"]["devices"] if d["name"] != "up0"][0]
        # "Up_1" is no DNS label: a lower-cased name with a hash of the real one.
        self.assertRegex(second["name"], r"^up-1-[0-9a-f]{8}$")
        self.assertEqual(second["attributes"]["xdpvhost.io/uplink"], {"string": "Up_1"})
        self.assertEqual(second["attributes"]["xdpvhost.io/maxMtu"], {"int": 3822})
        self.assertEqual(second["attributes"]["xdpvhost.io/mtu"], {"int": 3822})  # 9000 capped
        self.assert_sent_objects_valid()
        # The kubelet deletes a node's slices when it starts: the plugin publishes again.
        self.api.remove("resourceslices", s["metadata"]["name"])
        again = self.published_slice()
        self.assertNotEqual(again["metadata"]["name"], s["metadata"]["name"])
        self.assertEqual(len(again["spec"]["devices"]), 2)
        self.assert_sent_objects_valid()


class SliceInSync:
    """A slice the API server holds as the plugin wants it is not written
    again, whatever the server made of it: here over twelve reconcile
    passes, and after the plugin restarts (six). Mixed into a PluginTestCase
    with the stand-in's feature gates and the published capacity."""

    capacity = "1k"  # --ports-capacity 1000 as the server stores it

    def check_left_alone(self, passes=12):
        first = self.published_slice()
        self.wait_passes(passes)
        puts = self.api.sent("PUT", "resourceslices")
        self.assertEqual(len(puts), 0, f"the slice was written again {len(puts)} times in {passes} passes")
        now = self.published_slice()
        self.assertEqual(now["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"])
        self.assertEqual(now["spec"]["pool"]["generation"], 1)
        self.assertEqual(now["metadata"]["generation"], 1)
        return now

    def check_restart_leaves_it_alone(self):
        self.plugin.kill()
        self.plugin.start()
        self.check_left_alone(passes=6)


@needs_root()
class SlicesWithConsumableCapacity(SliceInSync, PluginTestCase):
    """Kubernetes 1.36 and later (DRAConsumableCapacity on by default)."""

    tag = "s136"
    plugin_args = ("--ports-capacity", "1000")

    def test_a_slice_in_sync_is_not_written_again(self):
        s = self.check_left_alone()
        d = s["spec"]["devices"][0]
        self.assertIs(d["allowMultipleAllocations"], True)
        self.assertEqual(d["capacity"]["xdpvhost.io/ports"]["value"], self.capacity)
        self.assertNotIn("does not keep", self.plugin.tail(400))
        self.check_restart_leaves_it_alone()


@needs_root()
class SlicesWithoutConsumableCapacity(SliceInSync, PluginTestCase):
    """Kubernetes 1.34 and 1.35 with their default feature gates: the API
    server drops allowMultipleAllocations and the capacity's requestPolicy.
    The plugin says so once, naming the gate, and leaves the slice alone
    (it rewrote it every pass before, bumping the pool's generation)."""

    tag = "s135"
    feature_gates = KUBE_1_35_GATES
    plugin_args = ("--ports-capacity", "1000", "--device-mode", "shared")

    def test_dropped_fields_are_reported_once_and_the_slice_is_not_rewritten(self):
        s = self.check_left_alone()
        self.assertEqual(dry_runs(self.api), [], "device mode shared asks nothing")
        self.assert_sent_objects_valid()
        events = self.api.of("events")
        self.assertEqual([(e["type"], e["reason"]) for e in events],
                         [("Warning", "ResourceSliceFieldsDropped")])
        self.assertIn("DRAConsumableCapacity", events[0]["message"])
        m = lab.scrape(self.net)
        dropped = {k[1]: v for k, v in m.items() if k[0] == "xdpvhost_dra_slice_dropped_fields"}
        self.assertEqual(dropped, {
            (("field", "allowMultipleAllocations"), ("gate", "DRAConsumableCapacity")): 1,
            (("field", "capacity.xdpvhost.io/ports.requestPolicy"), ("gate", "DRAConsumableCapacity")): 1})
        self.assertEqual(m[("xdpvhost_dra_device_mode", (("mode", "shared"),))], 1)
        d = s["spec"]["devices"][0]
        self.assertNotIn("allowMultipleAllocations", d)
        self.assertEqual(d["capacity"], {"xdpvhost.io/ports": {"value": self.capacity}})
        log = self.plugin.tail(400)
        self.assertEqual(log.count("does not keep"), 1, log)
        self.assertIn("up0.allowMultipleAllocations", log)
        self.assertIn("up0.capacity.xdpvhost.io/ports.requestPolicy", log)
        self.assertIn("feature gate DRAConsumableCapacity off", log)
        self.check_restart_leaves_it_alone()
        self.assertEqual(self.plugin.tail(400).count("does not keep"), 2, "reported once per start")
        self.assertEqual(len(self.api.of("events")), 2)


@needs_root()
class SlotsWithoutConsumableCapacity(SliceInSync, PluginTestCase):
    """Kubernetes 1.34 and 1.35 defaults, device mode auto (the default):
    a dry-run create shows the plugin that the API server does not keep a
    shared device, so it publishes each uplink as --ports-per-uplink
    devices of one port, which a scheduler without DRAConsumableCapacity
    allocates one claim each: the second VM on the uplink gets a device of
    its own instead of staying Pending. The plugin says so once per start,
    in its log and in a Warning Event on the Node."""

    tag = "slot135"
    feature_gates = KUBE_1_35_GATES
    plugin_args = ("--ports-per-uplink", "4")

    def test_each_vm_on_the_uplink_gets_a_device_of_its_own(self):
        s = self.check_left_alone()
        devices = s["spec"]["devices"]
        self.assertEqual([d["name"] for d in devices], ["up0-s0", "up0-s1", "up0-s2", "up0-s3"])
        for i, d in enumerate(devices):
            self.assertNotIn("allowMultipleAllocations", d)
            self.assertNotIn("capacity", d)
            self.assertEqual(d["attributes"]["xdpvhost.io/slot"], {"int": i})
            self.assertEqual(d["attributes"]["xdpvhost.io/uplink"], {"string": "up0"})
            self.assertEqual(d["attributes"]["xdpvhost.io/mtu"], {"int": lab.UPLINK_MTU})
        self.assert_sent_objects_valid()
        self.assertEqual(len(dry_runs(self.api)), 1)
        self.assertNotIn("does not keep", self.plugin.tail(400))
        events = self.api.of("events")
        self.assertEqual([(e["type"], e["reason"]) for e in events], [("Warning", "PortSlotDevices")])
        self.assertEqual(events[0]["involvedObject"]["uid"], self.node["metadata"]["uid"])
        m = lab.scrape(self.net)
        self.assertEqual((m[("xdpvhost_dra_device_mode", (("mode", "slots"),))],
                          m[("xdpvhost_dra_device_mode", (("mode", "shared"),))]), (1, 0))
        self.assertFalse([k for k in m if k[0] == "xdpvhost_dra_slice_dropped_fields"])
        # Two VMs' claims, each allocated a slot as such a scheduler leaves
        # them (no shareID, no consumed capacity): both prepared on up0.
        sockets = set()
        for i, vm in enumerate(("vm1", "vm2")):
            c, _ = self.seed_vm(claim_name=f"claim-{vm}", vm=vm, results=[{
                "request": "vhost-port", "driver": "xdpvhost.io", "pool": lab.NODE_NAME,
                "device": f"up0-s{i}"}])
            uid = c["metadata"]["uid"]
            answer = self.plugin.prepare(objs.ref(c))[uid]
            self.assertEqual(answer.error, "")
            self.assertEqual(answer.devices[0].device_name, f"up0-s{i}")
            status = self.api.get("resourceclaims", f"claim-{vm}", NS)["status"]["devices"][0]
            self.assertNotIn("shareID", status)
            sockets.add(status["data"]["socket"]["hostPath"])
        ports = [p for p in self.daemon.call("port.list") if p["socket"] in sockets]
        self.assertEqual(len(ports), 2, self.daemon.call("port.list"))
        self.assertEqual({self.daemon.call("port.get", name=p["name"])["uplink"] for p in ports}, {"up0"})
        self.assert_sent_objects_valid()
        self.check_restart_leaves_it_alone()
        self.assertEqual(len(self.api.of("events")), 2, "reported once per start")


class DeviceModeChoice(unittest.TestCase):
    """Device mode auto follows the API server: slots while it drops a
    shared device's fields, shared once it keeps them (the gate turned on
    and the server restarted), asked again every AUTO_RECHECK_S; and the
    asking, as a periodic path, holds nothing over 2000 passes. The
    publisher runs in this process against the stand-in, with a clock the
    test moves."""

    def setUp(self):
        sys.path.insert(0, os.path.join(lab.ROOT, "kubevirt", "dra_plugin"))
        self.addCleanup(sys.path.remove, sys.path[0])
        self.dir = lab.make_workdir("mode")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.api = RecordedApiServer(feature_gates=KUBE_1_35_GATES,
                                     cluster_role=lab.plugin_cluster_role()).start()
        self.addCleanup(self.api.stop)
        self.node = self.api.add(objs.node(lab.NODE_NAME))

    def test_slots_until_the_server_keeps_a_shared_device(self):
        from xdpvhost_dra import kube_api, node_events, resource_slice
        from xdpvhost_dra.uplink_devices import UplinkDevice
        now = [0.0]
        api = kube_api.KubeApi(self.api.kubeconfig(os.path.join(self.dir, "kubeconfig")))
        publisher = resource_slice.SlicePublisher(api, node_events.Node(api, lab.NODE_NAME), 256,
                                                  resource_slice.AUTO, 4, clock=lambda: now[0])
        uplinks = [UplinkDevice(device="up0", uplink="up0", interface="eth1", mtu=1500, max_mtu=1774),
                   UplinkDevice(device="up1", uplink="up1", interface="eth2", mtu=1500, max_mtu=1774)]

        def devices():
            return [d["name"] for d in self.api.of("resourceslices")[0]["spec"]["devices"]]
        self.assertEqual(publisher.publish(uplinks), "created")
        self.assertEqual(devices(), [f"up{u}-s{i}" for u in (0, 1) for i in range(4)])
        # The API server restarted with DRAConsumableCapacity on: taken up
        # at the next asking, not before.
        self.api.feature_gates = dict(self.api.feature_gates, DRAConsumableCapacity=True)
        now[0] += resource_slice.AUTO_RECHECK_S - 1
        self.assertEqual(publisher.publish(uplinks), "unchanged")
        now[0] += 1
        self.assertEqual(publisher.publish(uplinks), "updated")
        self.assertEqual(devices(), ["up0", "up1"])
        stored = self.api.of("resourceslices")[0]
        self.assertIs(stored["spec"]["devices"][0]["allowMultipleAllocations"], True)
        self.assertEqual(stored["spec"]["pool"]["generation"], 2)
        events = self.api.of("events")
        self.assertEqual([(e["type"], e["reason"]) for e in events],
                         [("Warning", "PortSlotDevices"), ("Normal", "SharedDevices")])
        from xdpvhost_dra import plugin_metrics
        mode = plugin_metrics.REGISTRY.get_sample_value
        self.assertEqual((mode("xdpvhost_dra_device_mode", {"mode": "shared"}),
                          mode("xdpvhost_dra_device_mode", {"mode": "slots"})), (1, 0))
        for e in events:
            self.assertEqual(objs.event_errors(e), [], e)
        # 2000 passes, one asking in every other: nothing written, nothing held.
        writes = len(self.api.sent("PUT")) + len(self.api.sent("POST"))
        fds = procfs.resources(os.getpid())["fd_kinds"]
        for _ in range(2000):
            now[0] += resource_slice.AUTO_RECHECK_S / 2
            self.assertEqual(publisher.publish(uplinks), "unchanged")
        self.assertEqual(len(dry_runs(self.api)), 1 + 1 + 1000)
        self.assertEqual(len(self.api.sent("PUT")) + len(self.api.sent("POST")), writes + 1000)
        self.assertEqual(procfs.resources(os.getpid())["fd_kinds"], fds)
        self.assertEqual(len(self.api.of("events")), 2)
        # Thirty uplinks: slots within the slice's 64, said once.
        many = [UplinkDevice(device=f"u{i}", uplink=f"u{i}", interface="", mtu=1500, max_mtu=1774)
                for i in range(30)]
        self.api.feature_gates = dict(self.api.feature_gates, DRAConsumableCapacity=False)
        now[0] += resource_slice.AUTO_RECHECK_S
        with self.assertLogs("xdpvhost-dra.slice", "WARNING") as logs:
            self.assertEqual(publisher.publish(many), "updated")
            self.assertEqual(publisher.publish(many), "unchanged")
        self.assertEqual(len(devices()), 60)
        self.assertEqual(sum("2 port slots each" in line for line in logs.output), 1, logs.output)


class LauncherLookup(unittest.TestCase):
    """The VM of a claim's pod, found as the plugin finds it (launcher.py):
    from the pod's name and UID alone, proven by the VMI's
    status.activePods, through the official client against the stand-in
    with the deployed ClusterRole, which grants no access to pods."""

    def setUp(self):
        sys.path.insert(0, os.path.join(lab.ROOT, "kubevirt", "dra_plugin"))
        self.addCleanup(sys.path.remove, sys.path[0])
        self.dir = lab.make_workdir("launcher")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.api = RecordedApiServer(cluster_role=lab.plugin_cluster_role()).start()
        self.addCleanup(self.api.stop)
        from xdpvhost_dra import kube_api
        self.client = kube_api.KubeApi(self.api.kubeconfig(os.path.join(self.dir, "kubeconfig")))

    def vm(self, name, suffix="x7k2p", node=lab.NODE_NAME, listed=True):
        vmi = objs.vmi(NS, name)
        pod = objs.launcher_pod(NS, objs.launcher_name(name, suffix), name, vmi)
        self.api.add(objs.run_on(vmi, pod, node) if listed else vmi)
        return vmi, pod

    def find(self, pod, wait_s=0.0):
        from xdpvhost_dra import launcher
        return launcher.find(self.client, NS, pod["metadata"]["name"], pod["metadata"]["uid"], lab.NODE_NAME,
                             wait_s=wait_s)

    def test_the_pods_name_and_the_vmis_active_pods(self):
        from xdpvhost_dra import launcher
        vmi, pod = self.vm("vm1")
        vm, found = self.find(pod)
        self.assertEqual((vm, found["metadata"]["uid"]), ("vm1", vmi["metadata"]["uid"]))
        # A pod not named as a launcher runs no VM: no request at all.
        self.assertEqual(launcher.find(self.client, NS, "dpdk-app-7d4b9", str(uuid.uuid4()), lab.NODE_NAME),
                         ("", None))
        for name in ("virt-launcher-", "virt-launcher-x7k2p", "virt-launcher-vm1x7k2p"):
            self.assertIsNone(launcher.name_prefix(name), name)
        # Another pod of that name (the UID differs), the VMI on another
        # node, the VMI not there: each is the claim's error, naming why.
        with self.assertRaisesRegex(launcher.LauncherError, "does not list it among its pods"):
            launcher.find(self.client, NS, pod["metadata"]["name"], str(uuid.uuid4()), lab.NODE_NAME, wait_s=0)
        _, elsewhere = self.vm("vm2", node="node-b")
        with self.assertRaisesRegex(launcher.LauncherError, "lists it on node 'node-b', not 'node-a'"):
            self.find(elsewhere)
        ghost = objs.launcher_pod(NS, "virt-launcher-vm3-g0n3x", "vm3")
        with self.assertRaisesRegex(launcher.LauncherError, f"VMI {NS}/vm3 does not exist after 0 s"):
            self.find(ghost)
        self.assertEqual([r for r in self.api.requests if "/pods" in r["path"]], [])
        self.assertEqual({r["status"] for r in self.api.requests}, {200, 404})

    def test_a_pod_the_vmi_lists_a_moment_later(self):
        """virt-controller records the pod once it is scheduled, which can
        be after the kubelet asks for the claim: the lookup waits for it."""
        import threading
        vmi, pod = self.vm("vm1", listed=False)
        timer = threading.Timer(0.5, lambda: self.api.add(objs.run_on(vmi, pod, lab.NODE_NAME)))
        timer.start()
        self.addCleanup(timer.cancel)
        started = time.monotonic()
        self.assertEqual(self.find(pod, wait_s=10)[0], "vm1")
        self.assertLess(time.monotonic() - started, 5)

    def test_a_vm_name_cut_in_its_pods_name(self):
        """The API server cuts a generateName to 58 characters: a VM name
        of more than 43 leaves only its start in the pod's name, and the
        VMI that lists the pod is found among the namespace's, even beside
        another VM whose name starts the same; a name of exactly 43 is
        whole and needs no list."""
        start = "a-vm-with-a-name-long-enough-to-be-cut-off-in"
        self.assertEqual(len(start), 45)
        vmi, pod = self.vm(start + "-its-pod-name")
        twin, _ = self.vm(start + "-another-pod", suffix="b2c4d")
        self.assertEqual(len(pod["metadata"]["name"]), 63)
        self.assertEqual(self.find(pod)[0], start + "-its-pod-name")
        self.assertEqual(len(self.api.sent("GET", r"/virtualmachineinstances$")), 1)
        exact = "x" * 43
        _, whole = self.vm(exact)
        self.assertEqual(len(whole["metadata"]["name"]), 63)
        self.assertEqual(self.find(whole)[0], exact)
        self.assertEqual(len(self.api.sent("GET", r"/virtualmachineinstances$")), 1)

    def test_the_running_since_of_a_vms_qemu(self):
        from xdpvhost_dra import socket_watch
        vmi, pod = self.vm("vm1")
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        self.assertIsNone(socket_watch.running_since(vmi, name, uid, lab.NODE_NAME), "scheduled only")
        objs.run_on(vmi, pod, lab.NODE_NAME, running_since="2026-01-01T00:00:10Z")
        self.assertEqual(socket_watch.running_since(vmi, name, uid, lab.NODE_NAME), 1767225610.0)
        self.assertIsNone(socket_watch.running_since(vmi, name, str(uuid.uuid4()), lab.NODE_NAME))
        # A migration's target pod on this node: since the migration began.
        target = objs.launcher_pod(NS, objs.launcher_name("vm1", "t4rg7"), "vm1", vmi)
        vmi["status"]["activePods"][target["metadata"]["uid"]] = "node-b"
        vmi["status"]["migrationState"] = {"targetPod": target["metadata"]["name"], "targetNode": "node-b",
                                           "startTimestamp": "2026-01-01T00:01:00Z"}
        self.assertEqual(socket_watch.running_since(vmi, target["metadata"]["name"], target["metadata"]["uid"],
                                                    "node-b"), 1767225660.0)
        self.assertEqual(socket_watch.running_since(vmi, name, uid, lab.NODE_NAME), 1767225610.0)


@needs_root()
class SlicesOfADownUplink(PluginTestCase):
    """A device whose uplink is down is tainted (xdpvhost.io/uplink-down,
    NoSchedule: no new claim is allocated it, VMs on it keep their ports);
    the taint goes when the link comes back. The server stamps timeAdded:
    the slice is not rewritten for it."""

    tag = "taint"

    def device(self):
        return self.published_slice()["spec"]["devices"][0]

    def set_link(self, state):
        lab.netns.run("ip", "-n", self.net.node, "link", "set", lab.NODE_IF, state)

    def test_a_down_uplink_is_tainted_until_it_is_up_again(self):
        self.assertNotIn("taints", self.device())
        self.set_link("down")
        lab.wait_until(lambda: self.device().get("taints"), timeout=20, what="the taint")
        taint = self.device()["taints"][0]
        self.assertEqual({k: taint[k] for k in ("key", "value", "effect")},
                         {"key": "xdpvhost.io/uplink-down", "value": "down", "effect": "NoSchedule"})
        self.assertIn("timeAdded", taint)  # the server's
        self.assert_sent_objects_valid()
        puts = len(self.api.sent("PUT", "resourceslices"))
        self.wait_passes(6)
        self.assertEqual(len(self.api.sent("PUT", "resourceslices")), puts, "rewritten for timeAdded")
        self.set_link("up")
        lab.wait_until(lambda: "taints" not in self.device(), timeout=20, what="the taint gone")
        self.assertEqual(self.published_slice()["spec"]["pool"]["generation"], 3)


@needs_root()
class SlicesOfADownUplinkWithoutDeviceTaints(PluginTestCase):
    """Kubernetes 1.34 and 1.35 defaults: the server drops the taint; the
    plugin says so, naming DRADeviceTaints, and does not write again."""

    tag = "taint135"
    feature_gates = KUBE_1_35_GATES

    def test_the_dropped_taint_is_reported(self):
        first = self.published_slice()  # port slots: the server has DRAConsumableCapacity off too
        lab.netns.run("ip", "-n", self.net.node, "link", "set", lab.NODE_IF, "down")
        lab.wait_until(lambda: "up0-s0.taints" in self.plugin.tail(400), timeout=20,
                       what="the dropped taint reported")
        self.assertIn("DRADeviceTaints", self.plugin.tail(400))
        self.assertIn("and 28 more", self.plugin.tail(400), "32 slots' taints, four named")
        events = [e for e in self.api.of("events") if e["reason"] == "ResourceSliceFieldsDropped"]
        self.assertEqual(len(events), 1)
        self.assertIn("DRADeviceTaints", events[0]["message"])
        self.assertEqual(self.metric("xdpvhost_dra_slice_dropped_fields", field="taints",
                                     gate="DRADeviceTaints"), 32)
        self.wait_passes(4)
        self.assertEqual(self.api.sent("PUT", "resourceslices"), [])
        self.assertEqual(self.published_slice()["metadata"]["resourceVersion"],
                         first["metadata"]["resourceVersion"])


def least_of_looks(pid):
    """fds per kind and RssAnon, the least of ten looks: a reconcile pass
    holds a connection or two between plugin and daemon while it runs (one
    every few ms), and a leak raises the least too."""
    looks = []
    for _ in range(10):
        looks.append(procfs.resources(pid))
        time.sleep(0.013)
    kinds = {k for r in looks for k in r["fd_kinds"]}
    least = {k: min(r["fd_kinds"].get(k, 0) for r in looks) for k in kinds}
    # A kind held only while a pass runs (a sysfs read) is none held.
    return ({k: n for k, n in least.items() if n > 0}, min(r["anon_kb"] for r in looks))


def dry_runs(api):
    return [r for r in api.sent("POST", r"/resourceslices$") if r["query"].get("dryRun") == "All"]


class PluginRole(unittest.TestCase):
    """The ClusterRole the plugin is deployed with grants the requests it
    makes and no more (every other test runs the plugin against a stand-in
    that enforces it, so a missing grant fails those)."""

    def test_only_what_the_plugin_does(self):
        from apiserver_standin import _allows
        role = lab.plugin_cluster_role()
        granted = [("resource.k8s.io", "resourceslices", v, None) for v in ("list", "create", "update", "delete")]
        granted += [("resource.k8s.io", "resourceclaims", "get", "c"),
                    ("resource.k8s.io", "resourceclaims/status", "update", "c"),
                    ("resource.k8s.io", "resourceclaims/driver", "associated-node:update", "xdpvhost.io"),
                    ("", "nodes", "get", "n"), ("", "events", "create", None),
                    ("kubevirt.io", "virtualmachineinstances", "get", "vm"),
                    ("kubevirt.io", "virtualmachineinstances", "list", None)]
        for g in granted:
            self.assertTrue(_allows(role, *g), g)
        refused = [("resource.k8s.io", "resourceslices", v, None) for v in ("get", "watch", "patch")]
        refused += [("resource.k8s.io", "resourceclaims", v, None) for v in ("list", "watch", "update")]
        refused += [("resource.k8s.io", "resourceclaims/status", v, "c") for v in ("get", "patch")]
        refused += [("resource.k8s.io", "resourceclaims/driver", "associated-node:update", "other.io"),
                    ("", "nodes", "list", None), ("", "pods", "get", "p"), ("", "pods", "list", None),
                    ("", "pods", "watch", None), ("", "secrets", "get", "s"),
                    ("", "events", "update", "e"), ("", "events", "list", None),
                    ("kubevirt.io", "virtualmachineinstances", "watch", None),
                    ("kubevirt.io", "virtualmachineinstances", "update", "vm")]
        for r in refused:
            self.assertFalse(_allows(role, *r), r)


class StandinQuantities(unittest.TestCase):
    """The stand-in stores quantities as the API server does (the values
    of apimachinery's quantity tests)."""

    def test_canonical_forms(self):
        for sent, stored in [("1", "1"), ("256", "256"), ("1500", "1500"), ("1000m", "1"), ("+1", "1"),
                             ("01", "1"), ("1000", "1k"), ("2000", "2k"), ("1000000", "1M"),
                             ("0.5", "500m"), ("1.5", "1500m"), ("1024Mi", "1Gi"), ("1e3", "1e3"),
                             ("0", "0")]:
            self.assertEqual(canonical_quantity(sent), stored, sent)
        with self.assertRaises(ValueError):
            canonical_quantity("1 k")


@needs_root()
class ClaimErrors(PluginTestCase):
    """Per-claim problems are answered in that claim's error, never as a
    gRPC failure, and leave nothing behind."""

    tag = "err"
    plugin_args = ("--socket-acl", f"u:{ACL_UID}")

    def nothing_on_disk(self):
        for d in (self.plugin.socket_root, self.plugin.cdi_root):
            self.assertEqual(os.listdir(d) if os.path.isdir(d) else [], [], d)
        self.assertEqual(self.state_files(), [])
        self.assertEqual(self.daemon.call("port.list"), [])

    def test_bad_claims_get_their_own_errors(self):
        self.published_slice()
        good_uid = str(uuid.uuid4())
        replaced = self.seed_claim("replaced")
        unallocated = self.seed_claim("unallocated", allocated=False)
        other_pool = self.seed_claim("other-pool", results=[{
            "request": "vhost-port", "driver": "xdpvhost.io", "pool": "node-b", "device": "up0"}])
        unknown_dev = self.seed_claim("unknown-device", device="up9")
        bad_param = self.seed_claim("bad-param", config=[{"source": "FromClaim", "opaque": {
            "driver": "xdpvhost.io", "parameters": {"queues": 129}}}])
        bad_key = self.seed_claim("bad-key", config=[{"source": "FromClass", "opaque": {
            "driver": "xdpvhost.io", "parameters": {"mac": "52:54:00:00:00:01"}}}])
        two = self.seed_claim("two-devices", results=[
            {"request": "vhost-port", "driver": "xdpvhost.io", "pool": lab.NODE_NAME, "device": "up0",
             "shareID": str(uuid.uuid4())},
            {"request": "vhost-port", "driver": "xdpvhost.io", "pool": lab.NODE_NAME, "device": "up0",
             "shareID": str(uuid.uuid4())}])
        long_names = self.seed_claim("long", request="a-request-name-that-is-rather-long",
                                     pod_claim_name="a-pod-claim-name-that-is-long")
        # A named claim two VMs' pods use: one socket directory for two QEMUs.
        shared = objs.claim(NS, "shared", node_name=lab.NODE_NAME, pod_claim_name=None,
                            pod=objs.launcher_pod(NS, "virt-launcher-vm1-x7k2p", "vm1"))
        shared["status"]["reservedFor"].append(
            {"resource": "pods", "name": "virt-launcher-vm2-x7k2p", "uid": str(uuid.uuid4())})
        self.api.add(shared)
        claims = {
            "../etc": ((NS, "../etc", good_uid), "claim name '../etc' is not a DNS subdomain"),
            "bad-ns": (("Default/..", "x", str(uuid.uuid4())), "claim namespace 'Default/..' is not a DNS label"),
            "a/b": ((NS, "x", "a/b"), "claim UID 'a/b' is not a UID"),
            "missing": ((NS, "missing", str(uuid.uuid4())), "API server answered 404"),
            "replaced": ((NS, "replaced", str(uuid.uuid4())), "it got replaced"),
            "unallocated": (objs.ref(unallocated), "is not allocated"),
            "other-pool": (objs.ref(other_pool), "is from pool node-b, but this node's pool is node-a"),
            "unknown-device": (objs.ref(unknown_dev), "device up9 is not an uplink of this node's xdpvhostd"),
            "bad-param": (objs.ref(bad_param), "queues 129 is not an integer from 1 to 128"),
            "bad-key": (objs.ref(bad_key), "unknown parameter 'mac'"),
            "two-devices": (objs.ref(two), "one vhost-user port per request is supported"),
            "long": (objs.ref(long_names), "longer than 64 characters"),
            "shared": (objs.ref(shared), "is reserved for 2 pods (virt-launcher-vm1-x7k2p, "
                                         "virt-launcher-vm2-x7k2p): a vhost-user port serves one VM"),
        }
        self.assertEqual(replaced["metadata"]["name"], "replaced")
        answer = self.plugin.prepare(*[c for c, _ in claims.values()])
        self.assertEqual(sorted(answer), sorted(c[2] for c, _ in claims.values()))
        for key, (c, message) in claims.items():
            entry = answer[c[2]]
            self.assertIn(message, entry.error, key)
            self.assertEqual(len(entry.devices), 0, key)
        self.nothing_on_disk()
        self.assertEqual(self.api.sent("PUT", r"/status$"), [])
        self.assertEqual(self.plugin.proc.poll(), None)

    def test_unknown_claim_unprepare_is_not_an_error(self):
        uid = str(uuid.uuid4())
        answer = self.plugin.unprepare((NS, "never-prepared", uid))
        self.assertEqual(list(answer), [uid])
        self.assertEqual(answer[uid].error, "")
        self.assertIn("not prepared by this plugin; nothing to do", self.plugin.tail())
        bad = self.plugin.unprepare((NS, "x", "../../etc/passwd"))
        self.assertIn("is not a UID", bad["../../etc/passwd"].error)

    def test_daemon_gone_is_a_claim_error_and_unprepare_waits_for_it(self):
        self.published_slice()
        c, _ = self.seed_vm()
        self.daemon.stop()
        answer = self.plugin.prepare(objs.ref(c))[c["metadata"]["uid"]]
        self.assertIn(f"xdpvhostd control socket {self.daemon.control_path}", answer.error)
        self.assertEqual(len(answer.devices), 0)
        # The socket directory is made before the port is added, and stays.
        (host_dir,) = [os.path.join(self.plugin.socket_root, d) for d in os.listdir(self.plugin.socket_root)]
        self.check_socket_dir_access(host_dir)
        # The half-made claim is recorded, so unprepare can undo it; while the
        # daemon is away unprepare fails (the kubelet retries) and keeps the state.
        self.assertEqual(len(self.state_files()), 1)
        failed = self.plugin.unprepare(objs.ref(c))[c["metadata"]["uid"]]
        self.assertIn("control socket", failed.error)
        self.assertEqual(len(self.state_files()), 1)
        self.daemon.start()
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[c["metadata"]["uid"]].error, "")
        self.nothing_on_disk()


@needs_root()
class PortLifecycle(PluginTestCase):
    tag = "port"

    def test_metrics_count_calls_errors_and_repairs(self):
        def calls(call, result):
            return self.metric("xdpvhost_dra_call_seconds_count", call=call, result=result)
        # Every series from the start, at 0.
        for reason in ("claim", "vmi", "api_server", "daemon_unavailable", "daemon_refused", "internal"):
            self.assertEqual(self.metric("xdpvhost_dra_call_errors_total", call="prepare", reason=reason), 0)
        self.assertEqual(self.metric("xdpvhost_dra_reconcile_repairs_total", what="port"), 0)
        self.assertEqual(self.metric("xdpvhost_dra_device_mode", mode="shared"), 1)
        self.published_slice()
        self.assertEqual(self.metric("xdpvhost_dra_slice_writes_total", action="created"), 1)
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        self.assertEqual(self.plugin.prepare(objs.ref(c))[uid].error, "")
        bad = self.seed_claim("elsewhere", device="up9")
        self.assertIn("is not an uplink", self.plugin.prepare(objs.ref(bad))[bad["metadata"]["uid"]].error)
        self.assertEqual((calls("prepare", "ok"), calls("prepare", "error")), (1, 1))
        self.assertEqual(self.metric("xdpvhost_dra_call_errors_total", call="prepare", reason="claim"), 1)
        self.assertEqual(self.metric("xdpvhost_dra_prepared_claims"), 1)
        # The daemon loses the port: the next pass puts it back, counted.
        port = [p for p in self.daemon.call("port.list") if p["name"].startswith("dra-")][0]["name"]
        self.daemon.call("port.remove", name=port)
        lab.wait_until(lambda: self.metric("xdpvhost_dra_reconcile_repairs_total", what="port") == 1,
                       timeout=20, what="the repair counted")
        self.assertEqual(self.metric("xdpvhost_dra_reconcile_failures_total"), 0)
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        self.assertEqual(calls("unprepare", "ok"), 1)
        self.assertEqual(self.metric("xdpvhost_dra_prepared_claims"), 0)

    def test_no_pod_locks_the_metrics_port(self):
        """With hostNetwork every pod on the node reaches the port. Sixteen
        idle connections from four addresses take none of it from a
        scraper at a fifth: newcomers evict the longest open, two per
        address, eight in all, so the plugin's threads stay bounded. Then
        2000 scrapes, the path Prometheus takes for months, hold nothing."""
        pid = self.plugin.proc.pid

        def threads():
            return len(os.listdir(f"/proc/{pid}/task"))
        lab.scrape(self.net)
        before = threads()
        held = [lab.connect_idle(self.net, f"127.0.0.{2 + i % 4}") for i in range(16)]
        try:
            start = time.monotonic()
            m = lab.scrape(self.net, source="127.0.0.9")
            took = time.monotonic() - start
            self.assertIn(("xdpvhost_dra_prepared_claims", ()), m)
            self.assertLessEqual(threads(), before + 8)
            # Each address kept its two newest; an evicted one reads end of file.
            ends = 0
            for h in held:
                h.settimeout(0.2)
                try:
                    ends += h.recv(1) == b""
                except socket.timeout:
                    pass  # still held
                except ConnectionResetError:
                    ends += 1
            self.assertGreaterEqual(ends, 8, "the oldest connections were not evicted")
        finally:
            for h in held:
                h.close()
        print(f"\nscrape with 16 idle connections held: {took * 1000:.1f} ms", file=sys.stderr)
        lab.wait_until(lambda: threads() <= before, timeout=15, what="the connections' threads gone")
        for _ in range(200):
            lab.scrape(self.net)
        first = least_of_looks(pid)
        start = time.monotonic()
        for _ in range(2000):
            lab.scrape(self.net)
        took = time.monotonic() - start
        last = least_of_looks(pid)
        print(f"2000 scrapes in {took:.1f} s; plugin fds {first[0]} -> {last[0]}, RssAnon {first[1]} -> "
              f"{last[1]} kB", file=sys.stderr)
        self.assertEqual(last[0], first[0], "the plugin's fds")
        self.assertLess(last[1] - first[1], 1024, "the plugin's heap grew")
        lab.wait_until(lambda: threads() <= before, timeout=15, what="the scrapes' threads gone")

    def test_a_claim_without_queues_gets_as_many_as_its_vms_nic(self):
        """A multiqueue VM asks for one queue pair per vCPU (2 sockets x 2
        cores here); a claim that sets no queues gets that many, so QEMU
        never asks for more than the port has. A claim's own queues win."""
        self.published_slice()
        vmi = objs.vmi(NS, "vm1", multiqueue_cpu={"sockets": 2, "cores": 2})
        for claim_name, config, wanted, suffix in (("by-vm", None, 4, "byvm0"), ("by-claim", 2, 2, "bycl0")):
            pod = objs.launcher_pod(NS, objs.launcher_name("vm1", suffix), "vm1", vmi)
            self.api.add(objs.run_on(vmi, pod, lab.NODE_NAME))
            c = self.seed_claim(claim_name, pod=pod, config=config and [{
                "source": "FromClaim", "requests": ["vhost-port"],
                "opaque": {"driver": "xdpvhost.io", "parameters": {"queues": config}}}])
            uid = c["metadata"]["uid"]
            self.assertEqual(self.plugin.prepare(objs.ref(c))[uid].error, "")
            socket_path = self.api.get("resourceclaims", claim_name, NS)["status"]["devices"][0]["data"][
                "socket"]["hostPath"]
            self.assertEqual(self.port_on(socket_path)["queue_pairs"], wanted, claim_name)
            self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")

    def test_prepare_then_unprepare(self):
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        answer = self.plugin.prepare(objs.ref(c))
        self.assertEqual(list(answer), [uid])
        host_dir, port = self.check_prepared(c, pod, answer[uid])
        # status.devices on the claim (D1's debug data), schema-valid.
        puts = self.api.sent("PUT", r"/resourceclaims/vhost-claim/status$")
        self.assertEqual(len(puts), 1)
        self.assert_sent_objects_valid()
        status = self.api.get("resourceclaims", "vhost-claim", NS)["status"]
        self.assertEqual(len(status["devices"]), 1)
        entry = status["devices"][0]
        self.assertEqual((entry["driver"], entry["pool"], entry["device"]), ("xdpvhost.io", lab.NODE_NAME, "up0"))
        self.assertEqual(entry["shareID"], c["status"]["allocation"]["devices"]["results"][0]["shareID"])
        self.assertEqual(entry["data"]["socket"]["hostPath"], os.path.join(host_dir, "vhost.sock"))
        # Unprepare: port, directory, CDI specs, metadata and state gone.
        answer = self.plugin.unprepare(objs.ref(c))
        self.assertEqual(answer[uid].error, "")
        self.check_gone(c, host_dir, port["name"])
        self.assertNotIn("devices", self.api.get("resourceclaims", "vhost-claim", NS)["status"])
        self.assert_sent_objects_valid()
        # Again: nothing to do, no error.
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")

    def test_a_kubelet_of_1_33_prepares_through_v1beta1_and_an_upgraded_one_unprepares(self):
        """A node whose kubelet speaks only v1beta1 (Kubernetes 1.32, 1.33)
        prepares a claim as a newer one would; the kubelet upgraded meanwhile
        (a node pool mid-upgrade) unprepares it through v1."""
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        answer = self.plugin.prepare(objs.ref(c), version="v1beta1")
        self.assertEqual(list(answer), [uid])
        host_dir, port = self.check_prepared(c, pod, answer[uid])
        # Again through v1beta1: idempotent, the same devices.
        again = self.plugin.prepare(objs.ref(c), version="v1beta1")
        self.assertEqual(list(again[uid].devices), list(answer[uid].devices))
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        self.check_gone(c, host_dir, port["name"])
        self.assertEqual(self.plugin.unprepare(objs.ref(c), version="v1beta1")[uid].error, "")

    def test_unprepare_of_a_deleted_claim_leaves_a_newer_same_named_claims_metadata(self):
        """The metadata path is by claim name: a claim deleted and made again
        under its name (a VM re-created) has its file rewritten by the new
        claim; the old claim's late unprepare must not remove it."""
        self.published_slice()
        old, _ = self.seed_vm()
        self.assertEqual(self.plugin.prepare(objs.ref(old))[old["metadata"]["uid"]].error, "")
        self.api.remove("resourceclaims", "vhost-claim", NS)
        new, _ = self.seed_vm(vm="vm2")
        new_uid = new["metadata"]["uid"]
        self.assertNotEqual(new_uid, old["metadata"]["uid"])
        self.assertEqual(self.plugin.prepare(objs.ref(new))[new_uid].error, "")
        md_file = os.path.join(self.plugin.kubelet_root, "plugins", "xdpvhost.io", "dra-device-metadata",
                               f"{NS}_vhost-claim", "vhost-port", "metadata.json")
        self.assertEqual(self.metadata_stream(md_file)[0]["metadata"]["uid"], new_uid)
        self.assertEqual(self.plugin.unprepare(objs.ref(old))[old["metadata"]["uid"]].error, "")
        self.assertTrue(os.path.exists(md_file), "the newer claim's metadata was removed")
        self.assertEqual(self.metadata_stream(md_file)[0]["metadata"]["uid"], new_uid)
        self.assertEqual(self.plugin.unprepare(objs.ref(new))[new_uid].error, "")
        self.assertFalse(os.path.exists(md_file))

    def test_reconcile_leaves_a_same_named_claims_metadata_to_the_newer_claim(self):
        """Both claims prepared (the old one's unprepare still to come): the
        reconcile passes put back what each claim needs, but the file both
        claims' paths name belongs to the one prepared last, whatever order
        the passes take them in (by UID: the old one's sorts last here)."""
        self.published_slice()
        old, _ = self.seed_vm(uid="ffffffff-0000-4000-8000-000000000001")
        old_uid = old["metadata"]["uid"]
        self.assertEqual(self.plugin.prepare(objs.ref(old))[old_uid].error, "")
        self.api.remove("resourceclaims", "vhost-claim", NS)
        new, _ = self.seed_vm(vm="vm2", uid="00000000-0000-4000-8000-000000000002")
        new_uid = new["metadata"]["uid"]
        self.assertEqual(self.plugin.prepare(objs.ref(new))[new_uid].error, "")
        md_file = os.path.join(self.plugin.kubelet_root, "plugins", "xdpvhost.io", "dra-device-metadata",
                               f"{NS}_vhost-claim", "vhost-port", "metadata.json")
        self.wait_passes(4)
        self.assertEqual(self.metadata_stream(md_file)[0]["metadata"]["uid"], new_uid)
        self.assertNotIn("(reconcile): device metadata", self.plugin.tail(), "the passes rewrote the file")
        self.assertEqual(self.plugin.unprepare(objs.ref(old))[old_uid].error, "")
        self.assertEqual(self.metadata_stream(md_file)[0]["metadata"]["uid"], new_uid)
        # Removed behind the plugin's back: the remaining claim's pass puts it back.
        os.unlink(md_file)
        for _ in range(50):
            if os.path.exists(md_file):
                break
            time.sleep(0.1)
        self.assertEqual(self.metadata_stream(md_file)[0]["metadata"]["uid"], new_uid)
        self.assertEqual(self.plugin.unprepare(objs.ref(new))[new_uid].error, "")
        self.assertFalse(os.path.exists(md_file))

    def test_prepare_is_idempotent_and_takes_queues_from_the_claim(self):
        self.published_slice()
        c, pod = self.seed_vm(config=[{"source": "FromClaim", "requests": ["vhost-port"], "opaque": {
            "driver": "xdpvhost.io", "parameters": {"apiVersion": "xdpvhost.io/v1", "kind": "PortConfig",
                                                    "queues": 2}}}])
        uid = c["metadata"]["uid"]
        first = self.plugin.prepare(objs.ref(c))[uid]
        host_dir, port = self.check_prepared(c, pod, first, queues=2)
        gets = len(self.api.sent("GET", r"/resourceclaims/vhost-claim$"))
        second = self.plugin.prepare(objs.ref(c))[uid]
        self.assertEqual(second, first)
        self.check_prepared(c, pod, second, queues=2)
        # The repeat answered from the plugin's state: no second GET of the claim.
        self.assertEqual(len(self.api.sent("GET", r"/resourceclaims/vhost-claim$")), gets)
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        self.check_gone(c, host_dir, port["name"])

    def sidecar_domain(self, c, vm):
        """The domain the binding sidecar (the real process, kubevirt/sidecar)
        makes for VM `vm`'s VMI, as the API holds it, from the device
        metadata the plugin prepared for claim `c`. The container runtime's
        bind mount of the metadata file (the CDI spec's mount) is the stand-in
        here: the file is copied to the spec's containerPath below a
        directory of this test."""
        sys.path.insert(0, os.path.join(lab.ROOT, "kubevirt", "sidecar"))
        sys.path.insert(0, os.path.join(lab.ROOT, "tests", "kubevirt", "sidecar"))
        os.environ["PYTHONPATH"] = ":".join(os.path.join(lab.ROOT, d) for d in (
            "kubevirt/sidecar", "kubevirt/dra_plugin"))
        import test_sidecar
        uid = c["metadata"]["uid"]
        root = os.path.join(self.dir, f"pod-{uid}")
        meta_root = os.path.join(root, "dra-device-attributes")
        spec = self.cdi_spec(f"xdpvhost.io_metadata_{uid}_vhost-port.json")
        (mount,) = spec["devices"][0]["containerEdits"]["mounts"]
        inside = os.path.join(meta_root, os.path.relpath(mount["containerPath"],
                                                         "/var/run/kubernetes.io/dra-device-attributes"))
        os.makedirs(os.path.dirname(inside))
        shutil.copyfile(mount["hostPath"], inside)
        sidecar = test_sidecar.Sidecar(root, "--metadata-root", meta_root)
        self.addCleanup(sidecar.stop)
        xml = sidecar.define(vmi=self.api.get("virtualmachineinstances", vm, NS))
        (iface,) = [i for i in test_sidecar.interfaces(test_sidecar.ET.fromstring(xml))
                    if i.get("type") == "vhostuser"]
        return iface

    def ports_of(self, claim_name):
        ports = [self.daemon.call("port.get", name=p["name"]) for p in self.daemon.call("port.list")]
        return [p for p in ports if (p.get("owner") or {}).get("claim") == claim_name]

    def test_the_vmis_mac_reaches_the_domain_and_a_migration_target_waits_for_it(self):
        """The VMI's macAddress is the port's fixed MAC and the NIC's in the
        domain. A same-node migration's target pod gets a port of its own
        with that MAC, which waits while the source holds it; another VM
        that asks for the MAC is refused."""
        self.published_slice()
        c, pod = self.seed_vm(mac="02-00-00-00-00-AB")
        uid = c["metadata"]["uid"]
        host_dir, port = self.check_prepared(c, pod, self.plugin.prepare(objs.ref(c))[uid])
        self.assertEqual(port["mac"], "02:00:00:00:00:ab")
        self.assertEqual(self.sidecar_domain(c, "vm1").find("mac").get("address"), "02:00:00:00:00:ab")
        status = self.api.get("resourceclaims", c["metadata"]["name"], NS)["status"]["devices"]
        self.assertEqual([d.get("networkData") for d in status], [{"hardwareAddress": "02:00:00:00:00:ab"}])
        self.assertEqual(objs.schema_errors(self.api.get("resourceclaims", c["metadata"]["name"], NS)), [])

        t, _ = self.seed_vm(claim_name="vhost-claim-target", pod_name="virt-launcher-vm1-t4rg7")
        tuid = t["metadata"]["uid"]
        self.assertEqual(self.plugin.prepare(objs.ref(t))[tuid].error, "")
        (target,) = self.ports_of("vhost-claim-target")
        self.assertEqual((target["mac_policy"], target["owner"]["vm"]), ("fixed", "vm1"))
        self.assertNotIn("mac", target, "the source's port holds the MAC until the migration shows")
        self.assertEqual(self.sidecar_domain(t, "vm1").find("mac").get("address"), "02:00:00:00:00:ab")
        self.assertEqual(self.port_on(port["socket"])["mac"], "02:00:00:00:00:ab")

        o, _ = self.seed_vm(claim_name="other-claim", vm="vm2", mac="02:00:00:00:00:ab")
        ouid = o["metadata"]["uid"]
        error = self.plugin.prepare(objs.ref(o))[ouid].error
        self.assertIn("02:00:00:00:00:ab is already the MAC of port", error)
        self.assertEqual(self.ports_of("other-claim"), [])
        for claim in (t, c, o):
            self.assertEqual(self.plugin.unprepare(objs.ref(claim))[claim["metadata"]["uid"]].error, "")
        self.check_gone(c, host_dir, port["name"])

    def test_a_generated_mac_is_the_vms_on_every_pod_and_differs_between_vms(self):
        """Without a macAddress the plugin generates the MAC from the VM and
        the request: a VM restarted (a new VMI and pod, a new claim) gets
        it again, another VM gets another, and the domain has it."""
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        host_dir, port = self.check_prepared(c, pod, self.plugin.prepare(objs.ref(c))[uid])
        self.assertEqual(self.sidecar_domain(c, "vm1").find("mac").get("address"), port["mac"])
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        self.check_gone(c, host_dir, port["name"])

        self.api.remove("virtualmachineinstances", "vm1", NS)
        again, _ = self.seed_vm(claim_name="vhost-claim-2", pod_name="virt-launcher-vm1-r3st4")
        self.assertEqual(self.plugin.prepare(objs.ref(again))[again["metadata"]["uid"]].error, "")
        (restarted,) = self.ports_of("vhost-claim-2")
        self.assertEqual(restarted["mac"], port["mac"])
        other, _ = self.seed_vm(claim_name="vhost-claim-3", vm="vm2")
        self.assertEqual(self.plugin.prepare(objs.ref(other))[other["metadata"]["uid"]].error, "")
        (vm2,) = self.ports_of("vhost-claim-3")
        self.assertNotEqual(vm2["mac"], port["mac"])
        self.assertRegex(vm2["mac"], r"^02(:[0-9a-f]{2}){5}$")
        self.assertEqual(self.sidecar_domain(other, "vm2").find("mac").get("address"), vm2["mac"])
        for claim in (again, other):
            self.assertEqual(self.plugin.unprepare(objs.ref(claim))[claim["metadata"]["uid"]].error, "")

    def test_a_vmi_that_cannot_give_the_mac_fails_the_prepare(self):
        """A virt-launcher pod whose VMI is not there, or whose interface
        has a MAC no port may have, gets a claim error (the kubelet
        retries), not a port with a made-up MAC."""
        self.published_slice()
        gone = objs.vmi(NS, "vm3")  # never stored: the pod's owner is not there
        pod = objs.launcher_pod(NS, "virt-launcher-vm3-g0n3x", "vm3", gone)
        g = self.seed_claim("ghost-claim", pod=pod)
        error = self.plugin.prepare(objs.ref(g))[g["metadata"]["uid"]].error
        self.assertIn("its VMI, whose interfaces give the ports their MACs, cannot be read", error)
        self.assertIn(f"VMI {NS}/vm3 does not exist after 1 s", error)
        m, _ = self.seed_vm(claim_name="multicast-claim", vm="vm4", mac="01:00:5e:00:00:01")
        error = self.plugin.prepare(objs.ref(m))[m["metadata"]["uid"]].error
        self.assertIn("VMI interface fast0: macAddress 01:00:5e:00:00:01 is a multicast address", error)
        self.assertEqual(self.ports_of("ghost-claim") + self.ports_of("multicast-claim"), [])
        for claim in (g, m):
            self.assertEqual(self.plugin.unprepare(objs.ref(claim))[claim["metadata"]["uid"]].error, "")
        for d in (self.plugin.cdi_root, self.plugin.socket_root):
            self.assertFalse(os.path.exists(d) and os.listdir(d), d)

    def test_thousands_of_reconcile_passes_hold_nothing(self):
        """The plugin's periodic path as it runs for months (every 10 s;
        here back to back): 2000 passes of the ResourceSlice check and the
        claim reconcile over a prepared claim, with the plugin's fds by kind
        and heap, and the daemon's fds by kind and mappings, counted before
        and after."""
        passes, warmup = 2000, 200
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        self.check_prepared(c, pod, self.plugin.prepare(objs.ref(c))[uid])
        self.plugin.kill()
        self.plugin = lab.Plugin(self.dir, self.net, self.daemon.control_path,
                                 os.path.join(self.dir, "kubeconfig"),
                                 extra=("--reconcile-interval", "0.001", "--log-level", "debug"))
        self.addCleanup(self.plugin.kill)
        self.plugin.start()
        done = lambda: self.plugin.tail(10 ** 6).count("reconciled 1 prepared claim(s), 0 failed")  # noqa: E731

        def plugin_resources():
            return least_of_looks(self.plugin.proc.pid)

        def daemon_resources():
            return (least_of_looks(self.daemon.pid)[0],
                    self.daemon.call("status")["resources"]["mapped"])

        lab.wait_until(lambda: done() >= warmup, timeout=120, what=f"{warmup} reconcile passes")
        plugin_before, daemon_before = plugin_resources(), daemon_resources()
        start, first = time.monotonic(), done()
        lab.wait_until(lambda: done() >= first + passes, timeout=600, what=f"{passes} more passes")
        plugin_after, daemon_after = plugin_resources(), daemon_resources()
        print(f"\n{done() - first} passes in {time.monotonic() - start:.1f} s; plugin fds "
              f"{plugin_before[0]} -> {plugin_after[0]}, RssAnon {plugin_before[1]} -> "
              f"{plugin_after[1]} kB; daemon fds {daemon_before[0]} -> {daemon_after[0]}",
              file=sys.stderr)
        self.assertEqual(plugin_after[0], plugin_before[0], "the plugin's fds")
        self.assertLess(plugin_after[1] - plugin_before[1], 2048, "the plugin's heap grew")
        self.assertEqual(daemon_after, daemon_before, "the daemon's fds and mappings")
        self.assertNotIn("Traceback", self.plugin.tail(10 ** 6))
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")

    def test_restarts_of_plugin_and_daemon_keep_the_claim(self):
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        first = self.plugin.prepare(objs.ref(c))[uid]
        host_dir, port = self.check_prepared(c, pod, first)
        # The plugin dies and comes back: same answer from its state.
        self.plugin.kill()
        self.plugin.start()
        self.assertEqual(self.plugin.prepare(objs.ref(c))[uid], first)
        # The daemon restarts without state: the plugin adds the port again.
        self.daemon.kill()
        self.daemon.start()
        lab.wait_until(lambda: self.port_or_none(port["name"]), timeout=20, what="the port re-added")
        self.assertIn(f"port {port['name']} added (reconcile)", self.plugin.tail())
        self.assertEqual(self.check_prepared(c, pod, first)[1]["mac"], port["mac"], "the same MAC")
        # The socket directory was removed behind the plugin's back: repaired.
        os.rmdir(host_dir)
        self.assertEqual(self.plugin.prepare(objs.ref(c))[uid], first)
        self.assertTrue(os.path.isdir(host_dir))
        # Unprepare after another plugin restart cleans up everything.
        self.assertEqual(self.plugin.stop(), 0)
        self.plugin.start()
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        self.check_gone(c, host_dir, port["name"])


@needs_root()
@needs_root()
@needs_root()
class RollingUpdate(PluginTestCase):
    """A DaemonSet update with a surge, as the kubelet (1.33+) sees it: the
    old and the new plugin pod of the node serve side by side, each on
    sockets named by its pod UID; a claim the old one prepared is the new
    one's to unprepare (the state both share); the old one's stop removes
    only its own sockets; the sockets of a killed instance go when the next
    one starts; one lock (flock) keeps the two from working at once."""
    tag = "roll"
    OLD, NEW, NEXT = ("0b5c7e2a-6f1d-4c1e-9a61-3d2f5b8e9c10", "5e0f1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b",
                      "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a")
    plugin_instance = OLD

    def instance(self, uid, port):
        p = lab.Plugin(self.dir, self.net, self.daemon.control_path, self.kubeconfig, instance=uid,
                       metrics_port=port)
        self.addCleanup(p.kill)
        return p.start()

    def probe(self, uid):
        p = subprocess.run([lab.PYTHON, lab.PLUGIN, "probe", "--kubelet-root", self.plugin.kubelet_root,
                            "--timeout", "3"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, POD_UID=uid))
        return p.returncode, (p.stdout + p.stderr).strip()

    def test_old_and_new_pods_serve_side_by_side_and_hand_over_the_claims(self):
        old = self.plugin
        self.assertEqual(old.get_info().endpoint, old.dra_socket)
        self.assertTrue(old.dra_socket.endswith(f"/dra-{self.OLD}.sock"))
        self.assertEqual(self.probe(self.OLD), (0, "alive"))
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        answer = old.prepare(objs.ref(c))
        host_dir, port = self.check_prepared(c, pod, answer[uid])
        # The new pod starts beside the old one: both answer, each on its own.
        new = self.instance(self.NEW, lab.METRICS_PORT + 1)
        self.assertEqual(new.get_info().endpoint, new.dra_socket)
        self.assertEqual(old.get_info().endpoint, old.dra_socket)
        self.assertEqual((self.probe(self.OLD)[0], self.probe(self.NEW)[0]), (0, 0))
        # The kubelet calls the newest: it knows the claim the old one prepared.
        again = new.prepare(objs.ref(c))
        self.assertEqual(list(again[uid].devices), list(answer[uid].devices))
        self.assertEqual(again[uid].error, "")
        # The old pod stops: its sockets go, the new one's stay and answer.
        self.assertEqual(old.stop(), 0)
        self.assertFalse(os.path.exists(old.reg_socket) or os.path.exists(old.dra_socket))
        self.assertEqual(new.get_info().name, "xdpvhost.io")
        self.assertIsNotNone(self.daemon.call("port.get", name=port["name"]))
        self.assertEqual(new.unprepare(objs.ref(c))[uid].error, "")
        self.check_gone(c, host_dir, port["name"])
        # A killed instance leaves its sockets; the next one to start removes
        # them, and never a live instance's.
        new.kill()
        self.assertTrue(os.path.exists(new.reg_socket) and os.path.exists(new.dra_socket))
        nxt = self.instance(self.NEXT, lab.METRICS_PORT + 2)
        self.assertFalse(os.path.exists(new.reg_socket) or os.path.exists(new.dra_socket))
        registry = os.listdir(os.path.dirname(nxt.reg_socket))
        self.assertEqual([e for e in registry if e.endswith("-reg.sock")], [os.path.basename(nxt.reg_socket)])
        self.assertIn(f"removed {new.reg_socket}: no plugin serves it any more", nxt.tail())

    def test_one_lock_across_the_instances(self):
        """While another process holds the node's lock (the other instance
        in a prepare), a prepare waits for it, and then runs."""
        import fcntl
        import threading
        self.published_slice()
        c, pod = self.seed_vm()
        uid = c["metadata"]["uid"]
        fd = os.open(os.path.join(self.plugin.state_dir, ".lock"), os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            result = {}
            t = threading.Thread(target=lambda: result.update(self.plugin.prepare(objs.ref(c))))
            t.start()
            t.join(2.0)
            self.assertTrue(t.is_alive(), "a prepare ran while another instance held the lock")
            fcntl.flock(fd, fcntl.LOCK_UN)
            t.join(45)
        finally:
            os.close(fd)
        self.assertFalse(t.is_alive())
        self.check_prepared(c, pod, result[uid])


class PluginJsonLogs(PluginTestCase):
    """--log-format json: every line the plugin writes is one JSON event
    (time, level, logger, message); those about a claim carry its
    namespace and name, and its VM once known."""

    tag = "jsonlog"
    plugin_args = ("--log-format", "json")

    def test_every_line_is_an_event_and_a_claims_carry_it(self):
        self.published_slice()
        c, _ = self.seed_vm()
        uid = c["metadata"]["uid"]
        self.assertEqual(self.plugin.prepare(objs.ref(c))[uid].error, "")
        self.wait_passes(2)
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        lines = [line for line in self.plugin.tail(10 ** 6).splitlines()
                 if line.strip() and not line.startswith("===== test:")]
        events = [json.loads(line) for line in lines]
        for e in events:
            self.assertLessEqual({"time", "level", "logger", "message"}, set(e), e)
        done = [e for e in events if e["message"].startswith("prepare claim") and ": done" in e["message"]]
        self.assertEqual(len(done), 1, events)
        self.assertEqual((done[0]["namespace"], done[0]["claim"], done[0]["vm"]), (NS, "vhost-claim", "vm1"))
        added = [e for e in events if e["message"].startswith("port ") and " added (prepare)" in e["message"]]
        self.assertEqual((added[0]["namespace"], added[0]["vm"]), (NS, "vm1"))
        unprepared = [e for e in events if e["message"].startswith("unprepare claim")]
        self.assertEqual(unprepared[-1]["vm"], "vm1")
        slice_events = [e for e in events if e["logger"] == "xdpvhost-dra.slice"]
        self.assertTrue(slice_events and all("claim" not in e for e in slice_events))


@needs_root()
class SocketDirLabels(PluginTestCase):
    """SELinux, decided from the host: on RHCOS the Debian image's
    libselinux says "disabled" (no selinuxfs in the container), and QEMU
    then could not create its socket in an unlabelled directory. A socket
    root that carries a label, as every directory of an SELinux host does,
    makes the plugin label each claim's directory container_file_t (and
    put the label back when it is lost); a root without one, none. Checked
    on this machine's filesystem (extended attributes, root may write
    security.selinux without an SELinux kernel)."""

    tag = "selinux"
    HOST_LABEL = "system_u:object_r:container_var_run_t:s0"  # what CRI-O's hostPath dirs carry
    WANTED = "system_u:object_r:container_file_t:s0"

    def label(self, path):
        try:
            return os.getxattr(path, "security.selinux").rstrip(b"\0").decode()
        except OSError:
            return None

    def prepare_one(self):
        self.published_slice()
        c, _ = self.seed_vm()
        uid = c["metadata"]["uid"]
        self.assertEqual(self.plugin.prepare(objs.ref(c))[uid].error, "")
        dirs = os.listdir(self.plugin.socket_root)
        self.assertEqual(len(dirs), 1)
        return os.path.join(self.plugin.socket_root, dirs[0])

    def test_a_host_that_labels_its_files_gets_labelled_socket_directories(self):
        os.makedirs(self.plugin.socket_root, exist_ok=True)
        os.setxattr(self.plugin.socket_root, "security.selinux", self.HOST_LABEL.encode() + b"\0")
        host_dir = self.prepare_one()
        self.assertEqual(self.label(host_dir), self.WANTED)
        self.assertIn(f"the host labels its files ({self.plugin.socket_root}: {self.HOST_LABEL})",
                      self.plugin.tail(200))
        # Lost (a relabel of the host path): the next reconcile pass puts it back.
        os.setxattr(host_dir, "security.selinux", self.HOST_LABEL.encode() + b"\0")
        lab.wait_until(lambda: self.label(host_dir) == self.WANTED, timeout=20, what="the label back")

    def test_a_host_without_labels_gets_none(self):
        if self.label(os.path.dirname(self.dir)) is not None:
            self.skipTest("this machine labels its files")
        host_dir = self.prepare_one()
        self.assertIsNone(self.label(host_dir))
        self.assertIn("the host does not label files", self.plugin.tail(200))


@needs_root()
class SocketReachesTheVm(PluginTestCase):
    """containerd 1.7 leaves CDI off by default: the pod starts without
    the claim's directory, QEMU makes its socket inside the container, and
    the VM runs with its link down, silently. A claim whose socket is not
    in its directory --socket-grace after the VM's QEMU started (the VMI
    Running on this node, as the VMI tells: the plugin reads no pods) is
    reported once (log, Warning Event on the pod naming
    enable_cdi, a gauge); when QEMU's socket appears, it is fine again. A
    pod that does not run yet is not reported."""

    tag = "cdi"
    plugin_args = ("--socket-grace", "3")

    def test_a_socket_that_does_not_appear_is_reported_on_the_pod(self):
        import datetime
        self.published_slice()
        vmi = objs.vmi(NS, "vm1")
        since = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=10)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        pod = objs.launcher_pod(NS, "virt-launcher-vm1-x7k2p", "vm1", vmi)
        self.api.add(objs.run_on(vmi, pod, lab.NODE_NAME, running_since=since))
        c = self.seed_claim("vhost-claim", pod=pod)
        waiting, _ = self.seed_vm(claim_name="claim-vm2", vm="vm2")  # scheduled, not running
        for claim in (c, waiting):
            self.assertEqual(self.plugin.prepare(objs.ref(claim))[claim["metadata"]["uid"]].error, "")

        def reported():
            return [e for e in self.api.of("events") if e["reason"] == "VhostUserSocketMissing"]
        lab.wait_until(reported, timeout=20, what="the missing socket reported")
        events = reported()
        self.assertEqual(len(events), 1, events)
        about = events[0]["involvedObject"]
        self.assertEqual((about["kind"], about["namespace"], about["name"], about["uid"]),
                         ("Pod", NS, pod["metadata"]["name"], pod["metadata"]["uid"]))
        self.assertEqual(events[0]["metadata"]["namespace"], NS)
        self.assertIn("enable_cdi = true", events[0]["message"])
        self.assertEqual(self.metric("xdpvhost_dra_claims_without_socket"), 1)
        self.assert_sent_objects_valid()
        # QEMU makes its socket (uid 107, libvirt's umask): the claim is well again.
        socket_path = self.api.get("resourceclaims", "vhost-claim", NS)["status"]["devices"][0]["data"][
            "socket"]["hostPath"]
        qemu = subprocess.Popen(socket_as(107, 107, "bind", socket_path), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(qemu.stdout.readline().strip(), "OK")
            lab.wait_until(lambda: self.metric("xdpvhost_dra_claims_without_socket") == 0, timeout=20,
                           what="the socket seen")
            self.wait_passes(4)
            self.assertEqual(len(reported()), 1, "reported once")
            self.assertIn("the VM's socket is there now", self.plugin.tail(200))
            self.assertEqual(self.plugin.tail(400).count("did not appear"), 1)
        finally:
            qemu.stdin.close()
            qemu.wait(10)


class GuestTraffic(PluginTestCase):
    tag = "guest"

    def test_qemu_server_at_the_prepared_socket_pings_through_the_uplink(self):
        image = os.environ.get("XDPVHOST_GUEST_IMAGE_DIR")
        if not image or not os.path.exists(os.path.join(image, "initrd.img")):
            self.skipTest("no guest image (XDPVHOST_GUEST_IMAGE_DIR; tests/guest/build_image.sh)")
        # QEMU runs as uid/gid 107, as virt-launcher runs it: it must be able to
        # create its socket in the directory the plugin made.
        wrapper = os.path.join(self.dir, "qemu-as-107")
        with open(wrapper, "w") as f:
            f.write("#!/bin/sh\n"
                    "# chown the guest's workdir (console log, QMP socket) to QEMU's user, then drop root.\n"
                    f'chown -R 107:107 "{self.dir}/guest"\n'
                    "umask 002  # libvirt starts QEMU with umask 002\n"
                    'exec setpriv --reuid=107 --regid=107 --clear-groups qemu-system-x86_64 "$@"\n')
        os.chmod(wrapper, 0o755)
        os.environ["XV_QEMU"] = wrapper
        sys.path.insert(0, os.environ.get("XDPVHOST_GUEST_DIR") or os.path.join(lab.ROOT, "tests", "guest"))
        import qemu_guest

        self.published_slice()
        c, pod = self.seed_vm(mac=RESERVED_MAC)  # the guest's NIC has the port's fixed MAC
        uid = c["metadata"]["uid"]
        answer = self.plugin.prepare(objs.ref(c))[uid]
        self.assertEqual(answer.error, "")
        (host_dir,) = [os.path.join(self.plugin.socket_root, d) for d in os.listdir(self.plugin.socket_root)]
        md = os.path.join(self.plugin.kubelet_root, "plugins", "xdpvhost.io", "dra-device-metadata",
                          f"{NS}_{c['metadata']['name']}", "vhost-port", "metadata.json")
        with open(md) as f:
            mtu = json.load(f)["requests"][0]["devices"][0]["attributes"]["mtu"]["int"]
        os.makedirs(os.path.join(self.dir, "guest"))
        guest = qemu_guest.Guest(image, os.path.join(host_dir, "vhost.sock"), name="vm1", server=True,
                                 mac=RESERVED_MAC, ip=f"{GUEST_IP}/24", peer=lab.PEER_IP,
                                 device_opts={"host_mtu": str(mtu)}, accel="tcg",
                                 run=["wait-peer,_,60", "ping,_,5"], workdir=os.path.join(self.dir, "guest"))
        self.addCleanup(guest.kill)
        guest.start()
        guest.wait_socket(timeout=30)
        st = os.stat(os.path.join(host_dir, "vhost.sock"))
        self.assertEqual((st.st_uid, st.st_gid), (107, 107))
        rc = guest.wait_done(timeout=300)
        self.assertEqual(rc, 0, guest.tail(40))
        ping = guest.results("ping")[-1]
        self.assertEqual(ping["loss_pct"], 0.0, ping)
        nic = guest.results("nic")[-1]
        self.assertEqual(nic["mtu"], mtu)
        stats = self.daemon.call("stats.get")
        print(f"\nguest ping through the uplink: {ping}\nport counters: {stats['ports']}", file=sys.stderr)
        self.assertEqual(self.plugin.unprepare(objs.ref(c))[uid].error, "")
        self.assertFalse(os.path.exists(host_dir))


SUITES = {"base": [MacRules, EventNames, DeadSockets, QueueLimit, PluginRole, StandinQuantities, Registration, ResourceSlices,
                   SlicesWithConsumableCapacity, SlicesWithoutConsumableCapacity,
                   SlotsWithoutConsumableCapacity, DeviceModeChoice, SlicesOfADownUplink,
                   SlicesOfADownUplinkWithoutDeviceTaints, ClaimErrors, LauncherLookup],
          "ports": [PortLifecycle, SocketDirLabels, SocketReachesTheVm, PluginJsonLogs, RollingUpdate],
          "guest": [GuestTraffic]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--suite", choices=sorted(SUITES) + ["all"], default="all")
    p.add_argument("-v", action="store_true")
    p.add_argument("-k", action="append", default=[], help="only tests whose name contains this")
    a = p.parse_args()
    classes = sum(SUITES.values(), []) if a.suite == "all" else SUITES[a.suite]
    loader = unittest.TestLoader()
    if a.k:
        loader.testNamePatterns = [f"*{k}*" for k in a.k]
    suite = unittest.TestSuite(loader.loadTestsFromTestCase(c) for c in classes)
    result = unittest.TextTestRunner(verbosity=2 if a.v else 1).run(suite)
    ran = result.testsRun - len(result.skipped)
    # A test with failing subtests is listed once per subtest: count tests.
    failed = len({getattr(t, "test_case", t).id() for t, _ in result.failures + result.errors})
    print(f"{ran - failed} passed, {failed} failed, {len(result.skipped)} skipped")
    if not result.wasSuccessful():
        return 1
    return 77 if result.testsRun and ran == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
