"""The Kubernetes manifests in deploy/kubernetes, offline:

- both overlays render with Debian's kubectl 1.20 (`kubectl kustomize`, its
  built-in kustomize), and so does the base;
- every object, in every manifest file and in both renderings, validates
  against the API models: Kubernetes and Prometheus Operator through the npm
  models in tooling/ (validate_models.mjs, unknown fields refused),
  resource.k8s.io/v1 also against the OpenAPI-derived JSON Schema in
  tests/kubevirt/schemas (kubevirt/INTERFACES.md, Resource API objects),
  KubeVirt objects against KubeVirt's API models (plus the DRA network
  fields of kubevirt/INTERFACES.md, KubeVirt configuration and VMI fields),
  OpenShift's SCC against tests/kubevirt/schemas;
- the DaemonSet has what a node-critical AF_XDP daemon needs (priority,
  tolerations, update strategy, probes that fit xdpvhostctl's timeout,
  Guaranteed QoS with whole CPUs, the kubelet plugin/CDI host paths, one
  control socket for both containers, exactly the capabilities the image
  gives xdpvhostd);
- the alert and dashboard expressions parse (promtool) and name only metric
  families, labels and label values that a real scrape of xdpvhostd exports
  (the daemon runs here with one port and no uplink; uplink families have no
  samples then, so their labels are taken from docs/operating.md's table).

Environment: XDPVHOSTD (the daemon), optional XDPVHOST_KUBECTL,
XDPVHOST_PROMTOOL, XDPVHOST_MANIFEST_TOOLING."""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import jsonschema
import yaml

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pylib"))
from xvtest import admission  # noqa: E402
from xvtest.admission import plugin_user  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
KUBE = os.path.join(ROOT, "deploy", "kubernetes")
SCHEMAS = os.path.join(ROOT, "tests", "kubevirt", "schemas")
TOOLS = "/opt/xdpvhost-tools"
KUBECTL = os.environ.get("XDPVHOST_KUBECTL") or f"{TOOLS}/kubernetes-client/usr/bin/kubectl"
PROMTOOL = os.environ.get("XDPVHOST_PROMTOOL") or f"{TOOLS}/prometheus/usr/bin/promtool"
NAMESPACE = "xdpvhost-system"
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "DeviceClass",
                  "SecurityContextConstraints", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
DAEMON_CAPS = {"NET_ADMIN", "NET_RAW", "IPC_LOCK", "SYS_ADMIN"}
# Labels a series gets from the scrape target (PodMonitor), not from the daemon.
TARGET_LABELS = {"node", "instance", "job", "pod"}


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def resource_schema():
    for path in (os.path.join(SCHEMAS, "resource.k8s.io-v1.schema.json"),
                 os.path.join(ROOT, "..", "shared", "reference", "kubevirt",
                              "resource.k8s.io-v1.schema.json")):
        if os.path.exists(path):
            return json.loads(read_text(path))
    raise FileNotFoundError("resource.k8s.io-v1.schema.json")


def kustomize(path):
    r = subprocess.run([KUBECTL, "kustomize", path], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"kubectl kustomize {path}: {r.stderr}")
    return [d for d in yaml.safe_load_all(r.stdout) if d]


def kustomization_patches():
    patches = set()
    for k in glob.glob(os.path.join(KUBE, "**", "kustomization.yaml"), recursive=True):
        spec = yaml.safe_load(read_text(k))
        for p in spec.get("patchesStrategicMerge") or []:
            patches.add(os.path.normpath(os.path.join(os.path.dirname(k), p)))
    return patches


def manifest_files():
    patches = kustomization_patches()
    return sorted(f for f in glob.glob(os.path.join(KUBE, "**", "*.yaml"), recursive=True)
                  if os.path.basename(f) != "kustomization.yaml" and f not in patches)


def load(path):
    return [d for d in yaml.safe_load_all(read_text(path)) if d]


def rel(path):
    return os.path.relpath(path, ROOT)


def find(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind} {name}: {len(found)} objects"
    return found[0]


class Rendering(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rendered = {o: kustomize(os.path.join(KUBE, "overlays", o))
                        for o in ("kubernetes", "openshift", "kube-prometheus-stack")}
        cls.rendered["base"] = kustomize(os.path.join(KUBE, "base"))

    def test_kube_prometheus_stacks_prometheus_selects_the_monitoring_objects(self):
        """kube-prometheus-stack's Prometheus takes PodMonitors and rules
        labelled release=<its release> only: the overlay adds the label, and
        is otherwise the plain Kubernetes one."""
        stack, plain = self.rendered["kube-prometheus-stack"], self.rendered["kubernetes"]
        for kind in ("PodMonitor", "PrometheusRule"):
            self.assertEqual(find(stack, kind)["metadata"]["labels"].get("release"),
                             "kube-prometheus-stack", kind)
            self.assertNotIn("release", find(plain, kind)["metadata"]["labels"], kind)
        key = lambda o: (o["kind"], o["metadata"]["name"])
        self.assertEqual(sorted(map(key, stack)), sorted(map(key, plain)))

    def test_kubectl_is_debians_1_20(self):
        r = subprocess.run([KUBECTL, "version", "--client", "-o", "json"], capture_output=True,
                           text=True, check=True)
        v = json.loads(r.stdout)["clientVersion"]
        self.assertEqual((v["major"], v["minor"]), ("1", "20"))

    def all_objects(self):
        """(source, object) for every manifest file and both renderings."""
        out = [(rel(f), o) for f in manifest_files() for o in load(f)]
        for name, objs in self.rendered.items():
            out += [(f"kubectl kustomize {name}", o) for o in objs]
        return out

    def test_every_object_validates(self):
        objects = self.all_objects()
        sources = {s for s, _ in objects}
        for f in manifest_files():
            self.assertIn(rel(f), sources, f"{f} holds no object")
        resource = resource_schema()
        scc = json.loads(read_text(os.path.join(SCHEMAS, "security.openshift.io-v1-scc.schema.json")))
        models = []
        for source, o in objects:
            where = f"{source}: {o['kind']}/{o['metadata']['name']}"
            with self.subTest(where):
                if o["apiVersion"] == "resource.k8s.io/v1":
                    jsonschema.Draft202012Validator(resource).validate(o)
                if o["kind"] == "SecurityContextConstraints":
                    jsonschema.Draft202012Validator(scc).validate(o)
                elif o["kind"] == "HyperConverged":
                    # No model of HCO's CRD here; its networkBinding is a map of
                    # KubeVirt's InterfaceBindingPlugin, checked as the KubeVirt
                    # CR's binding that HCO copies it to.
                    models.append({"source": f"{source} (spec.networkBinding)", "object": {
                        "apiVersion": "kubevirt.io/v1", "kind": "KubeVirt",
                        "metadata": {"name": "kubevirt", "namespace": "kubevirt"},
                        "spec": {"configuration": {"network": {"binding": o["spec"]["networkBinding"]}}}}})
                else:
                    models.append({"source": source, "object": o})
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(models, f)
            f.flush()
            r = subprocess.run(["node", os.path.join(HERE, "validate_models.mjs"), f.name],
                               capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(r.stdout.count("\nok ") + r.stdout.startswith("ok "), len(models),
                         r.stdout)

    def test_kinds_in_each_overlay(self):
        common = {"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                  "DaemonSet", "DeviceClass", "PodMonitor", "PrometheusRule", "ValidatingAdmissionPolicy",
                  "ValidatingAdmissionPolicyBinding"}
        self.assertEqual({o["kind"] for o in self.rendered["kubernetes"]}, common)
        self.assertEqual({o["kind"] for o in self.rendered["openshift"]},
                         common | {"SecurityContextConstraints", "RoleBinding"})

    def test_namespaces(self):
        for name, objs in self.rendered.items():
            for o in objs:
                with self.subTest(f"{name}: {o['kind']}/{o['metadata']['name']}"):
                    if o["kind"] in CLUSTER_SCOPED:
                        self.assertNotIn("namespace", o["metadata"])
                    else:
                        self.assertEqual(o["metadata"].get("namespace"), NAMESPACE)

    def test_daemonset(self):
        for overlay in ("kubernetes", "openshift"):
            with self.subTest(overlay):
                self.check_daemonset(self.rendered[overlay])

    def check_daemonset(self, objs):
        ds = find(objs, "DaemonSet", "xdpvhost")
        pds = find(objs, "DaemonSet", "xdpvhost-dra-plugin")
        pod, plugin_pod = ds["spec"]["template"]["spec"], pds["spec"]["template"]["spec"]
        for p in (pod, plugin_pod):
            self.assertEqual(p["priorityClassName"], "system-node-critical")
            self.assertIn({"operator": "Exists"}, p["tolerations"])
            # xdpvhostd stops within a second (tests/control/test_lifecycle.py),
            # the plugin within its 2 s grace; not the 30 s default.
            self.assertTrue(2 <= p["terminationGracePeriodSeconds"] <= 15)
        # The plugin runs wherever the daemon does.
        self.assertEqual(plugin_pod["nodeSelector"], pod["nodeSelector"])
        self.assertTrue(pod["hostNetwork"])
        self.assertFalse(pod.get("automountServiceAccountToken", True), "the daemon needs no API access")
        self.assertEqual(ds["spec"]["updateStrategy"]["type"], "RollingUpdate")
        # The plugin apart, updated with a surge: the new pod beside the old
        # one (each with its own sockets and pod IP: no host network, so no
        # port of the node is taken twice).
        self.assertEqual(pds["spec"]["updateStrategy"],
                         {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
        self.assertFalse(plugin_pod.get("hostNetwork", False))
        containers = {c["name"]: c for c in pod["containers"]}
        self.assertEqual(set(containers), {"xdpvhostd", "config"})
        self.assertEqual([c["name"] for c in plugin_pod["containers"]], ["dra-plugin"])
        # Guaranteed QoS: every container (init ones too) has requests == limits.
        for c in pod["containers"] + pod.get("initContainers", []) + plugin_pod["containers"]:
            self.assertEqual(c["resources"]["requests"], c["resources"]["limits"], c["name"])
            self.assertEqual(set(c["resources"]["requests"]), {"cpu", "memory"}, c["name"])
        daemon, plugin = containers["xdpvhostd"], plugin_pod["containers"][0]
        self.assertRegex(str(daemon["resources"]["requests"]["cpu"]), r"^[1-9][0-9]*$",
                         "whole CPUs, for the static CPU manager")
        # Probes run xdpvhostctl over the control socket (readiness: health,
        # liveness: status), never over the metrics port, which every pod on
        # the node reaches; each with a --timeout its probe's timeout leaves
        # room for.
        config = json.loads(next(o["data"]["config.json"] for o in objs if o["kind"] == "ConfigMap"
                                 and "config.json" in o.get("data", {})))
        metrics_port = int(config["metrics"]["listen"].rsplit(":", 1)[1])
        for probe, command in (("readinessProbe", "health"), ("livenessProbe", "status")):
            p = daemon[probe]
            self.assertEqual(set(p) & {"httpGet", "tcpSocket", "grpc"}, set(), probe)
            cmd = p["exec"]["command"]
            self.assertTrue(cmd[0].endswith("xdpvhostctl"), probe)
            self.assertEqual(cmd[-1], command, probe)
            cli_timeout = float(cmd[cmd.index("--timeout") + 1])
            self.assertGreater(p["timeoutSeconds"], cli_timeout, probe)
            self.assertGreaterEqual(p["periodSeconds"], p["timeoutSeconds"], probe)
        self.assertEqual([p["containerPort"] for p in daemon["ports"] if p["name"] == "metrics"],
                         [metrics_port])
        # Capabilities: exactly the daemon's set (the image's setcap), none
        # privileged, file capabilities need privilege escalation allowed.
        sc = daemon["securityContext"]
        self.assertEqual(set(sc["capabilities"]["add"]), DAEMON_CAPS)
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertTrue(sc["allowPrivilegeEscalation"])
        self.assertNotEqual(sc["runAsUser"], 0)
        self.assertEqual(sc["seccompProfile"], {"type": "RuntimeDefault"})
        for c in pod["containers"] + pod.get("initContainers", []) + plugin_pod["containers"]:
            self.assertFalse(c["securityContext"].get("privileged", False), c["name"])
        # Host paths: the kubelet's plugin and registry dirs, CDI, the socket root.
        def host_paths(p):
            return {v["hostPath"]["path"]: v["name"] for v in p["volumes"] if "hostPath" in v}
        host, plugin_host = host_paths(pod), host_paths(plugin_pod)
        for path in ("/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry",
                     "/var/run/cdi", "/run/xdpvhost"):
            self.assertIn(path, plugin_host)
        self.assertIn("/run/xdpvhost", host)
        mounts = {c["name"]: {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
                  for c in pod["containers"] + plugin_pod["containers"]}
        # Same path inside as on the host, where the kubelet or the daemon
        # needs it so (sockets the kubelet dials, directories CDI mounts).
        for path in ("/var/lib/kubelet/plugins", "/var/lib/kubelet/plugins_registry",
                     "/var/run/cdi", "/run/xdpvhost"):
            self.assertEqual(mounts["dra-plugin"][plugin_host[path]], path)
        self.assertEqual(mounts["xdpvhostd"][host["/run/xdpvhost"]], "/run/xdpvhost")
        # One control socket: the daemon's config, the plugin's flag, the
        # CLI's default, on the volume both mount.
        args = dict(a.split("=", 1) for a in plugin["args"])
        self.assertEqual(args["--control-socket"], config["control"]["socket"])
        self.assertEqual(config["control"]["socket"], "/run/xdpvhost/control.sock")
        self.assertTrue(args["--socket-root"].startswith("/run/xdpvhost/"))
        self.assertEqual(args["--cdi-root"], "/var/run/cdi")
        # ...and the plugin's own parser takes them (kubevirt/dra_plugin)
        sys.path.insert(0, os.path.join(ROOT, "kubevirt", "dra_plugin"))
        from xdpvhost_dra import options
        pod_uid = "0b5c7e2a-6f1d-4c1e-9a61-3d2f5b8e9c10"
        parsed = options.parse([a.replace("$(NODE_NAME)", "node-a").replace("$(POD_IP)", "fd00::7")
                                .replace("$(POD_UID)", pod_uid) for a in plugin["args"]])
        self.assertEqual(parsed.control_socket, config["control"]["socket"])
        # The plugin's metrics on the pod's address (an IPv6 one too), at
        # the port the pod names for the PodMonitor.
        self.assertEqual(parsed.metrics_listen, "fd00::7:9478")
        self.assertEqual([p["containerPort"] for p in plugin["ports"] if p["name"] == "dra-metrics"], [9478])
        self.assertEqual({e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in plugin["env"]},
                         {"NODE_NAME": "spec.nodeName", "POD_IP": "status.podIP", "POD_UID": "metadata.uid"})
        # Sockets of its own per pod, and the probe finds them ($POD_UID in
        # its environment: an exec probe expands no $(VAR)).
        self.assertEqual(parsed.rolling_update_uid, pod_uid)
        from xdpvhost_dra import plugin_sockets
        self.assertEqual(plugin_sockets.socket_paths("/var/lib/kubelet", pod_uid),
                         (f"/var/lib/kubelet/plugins/xdpvhost.io/dra-{pod_uid}.sock",
                          f"/var/lib/kubelet/plugins_registry/xdpvhost.io-{pod_uid}-reg.sock"))
        self.assertNotIn("$(", " ".join(plugin["livenessProbe"]["exec"]["command"]))
        uid = daemon["securityContext"]["runAsUser"]
        self.assertIn(f"u:{uid}", args.get("--socket-acl", "").split(","),
                      "the daemon's uid needs the ACL on QEMU's socket")
        # The metrics listener of the ConfigMap's config is loopback; the
        # init container renders it with the node's IP.
        self.assertTrue(config["metrics"]["listen"].startswith("127.0.0.1:"))
        init = {c["name"]: c for c in pod["initContainers"]}["prepare"]
        self.assertIn("render-config", " ".join(init["args"]))
        # ...with the uplink-interfaces rules of the same ConfigMap.
        template = {m["name"]: m["mountPath"] for m in init["volumeMounts"]}["config-template"]
        self.assertIn(f"--interfaces-file {template}/uplink-interfaces", " ".join(init["args"]))
        self.assertIn("uplink-interfaces", next(o["data"] for o in objs if o["kind"] == "ConfigMap"
                                                and "config.json" in o.get("data", {})))
        self.assertEqual(init["env"][0]["valueFrom"]["fieldRef"]["fieldPath"], "status.hostIP")
        # A ConfigMap edit reaches the daemon with no restart: the config
        # container renders it as the init container did, from the same
        # files to the same file, and the daemon follows that file.
        follower = containers["config"]
        command = follower["command"]
        self.assertTrue(command[0].endswith("render-config"))
        self.assertGreater(float(command[command.index("--follow") + 1]), 0)
        self.assertEqual(command[-2:], init["args"][0].split()[-2:])
        self.assertIn(f"--interfaces-file {template}/uplink-interfaces", " ".join(command))
        self.assertEqual(command[command.index("--node-ip") + 1], "$(NODE_IP)")
        self.assertEqual(follower["env"], init["env"])
        self.assertIn("--follow-config", daemon.get("args", []))
        config_mounts = {c["name"]: next(m for m in c["volumeMounts"] if m["name"] == "config")
                         for c in pod["containers"] if c["name"] in ("xdpvhostd", "config")}
        self.assertTrue(config_mounts["xdpvhostd"].get("readOnly"))
        self.assertFalse(config_mounts["config"].get("readOnly", False))
        self.assertEqual(config_mounts["xdpvhostd"]["mountPath"], config_mounts["config"]["mountPath"])
        sc = follower["securityContext"]
        self.assertEqual((sc["capabilities"]["drop"], sc.get("capabilities", {}).get("add"),
                          sc["allowPrivilegeEscalation"], sc["runAsNonRoot"]), (["ALL"], None, False, True))

    def test_image_gives_the_daemon_the_same_capabilities(self):
        dockerfile = read_text(os.path.join(ROOT, "deploy", "Dockerfile"))
        m = re.search(r"setcap (\S+)\+ep /usr/local/sbin/xdpvhostd", dockerfile)
        self.assertIsNotNone(m)
        self.assertEqual({c.removeprefix("cap_").upper() for c in m.group(1).split(",")},
                         DAEMON_CAPS)

    def test_podmonitor_scrapes_the_metrics_port(self):
        objs = self.rendered["kubernetes"]
        pm = find(objs, "PodMonitor", "xdpvhost")
        ports = set()
        for name in ("xdpvhost", "xdpvhost-dra-plugin"):
            ds = find(objs, "DaemonSet", name)
            labels = ds["spec"]["template"]["metadata"]["labels"]
            self.assertLessEqual(pm["spec"]["selector"]["matchLabels"].items(), labels.items(), name)
            ports |= {p["name"] for c in ds["spec"]["template"]["spec"]["containers"]
                      for p in c.get("ports", [])}
        self.assertEqual({ep["port"] for ep in pm["spec"]["podMetricsEndpoints"]}, {"metrics", "dra-metrics"})
        for ep in pm["spec"]["podMetricsEndpoints"]:
            self.assertIn(ep["port"], ports)
            self.assertTrue(ep["honorLabels"])
            self.assertIn("node", [r["targetLabel"] for r in ep["relabelings"]])

    def check_hyperconverged_patch(self, ex, kv):
        """The HyperConverged way gives the KubeVirt CR what the direct patch
        does. THE STAND-IN here is the KubeVirt spec HCO builds (its
        featureGates list always present, a binding of its own), to which HCO
        copies spec.networkBinding and then applies the jsonpatch annotation
        (RFC 6902, python3-jsonpatch; HCO uses evanphx/json-patch), paths
        under /spec/ only."""
        import jsonpatch
        hco = load(os.path.join(ex, "hyperconverged-patch.yaml"))[0]
        self.assertEqual((hco["apiVersion"], hco["kind"]), ("hco.kubevirt.io/v1beta1", "HyperConverged"))
        patch = jsonpatch.JsonPatch.from_string(hco["metadata"]["annotations"]["kubevirt.kubevirt.io/jsonpatch"])
        self.assertTrue(all(op["path"].startswith("/spec/") for op in patch.patch))
        built = {"spec": {"configuration": {
            "developerConfiguration": {"featureGates": ["CPUManager", "Snapshot"]},
            "network": {"networkInterface": "masquerade",
                        "binding": {"l2bridge": {"domainAttachmentType": "managedTap", "migration": {}},
                                    **hco["spec"]["networkBinding"]}}}}}
        got = patch.apply(built)["spec"]["configuration"]
        self.assertEqual(got["developerConfiguration"]["featureGates"],
                         ["CPUManager", "Snapshot", "NetworkDevicesWithDRA"])
        self.assertEqual(got["network"]["binding"]["vhostuser"], kv["network"]["binding"]["vhostuser"])
        self.assertIn("l2bridge", got["network"]["binding"])

    def test_openshift_scc_admits_the_daemonsets(self):
        for name in ("xdpvhost", "xdpvhost-dra-plugin"):
            with self.subTest(name):
                self.check_scc_admits(name)

    def check_scc_admits(self, name):
        objs = self.rendered["openshift"]
        scc = find(objs, "SecurityContextConstraints", "xdpvhost")
        pod = find(objs, "DaemonSet", name)["spec"]["template"]["spec"]
        added = {cap for c in pod["containers"] + pod.get("initContainers", [])
                 for cap in c["securityContext"]["capabilities"].get("add", [])}
        self.assertLessEqual(added, set(scc["allowedCapabilities"]))
        self.assertTrue(scc["allowHostNetwork"] and scc["allowHostDirVolumePlugin"])
        self.assertFalse(scc["allowPrivilegedContainer"])
        self.assertEqual(scc["seccompProfiles"], ["runtime/default"])
        kinds = {k for v in pod["volumes"] for k in v if k != "name"}
        self.assertLessEqual(kinds, set(scc["volumes"]))
        rb = find(objs, "RoleBinding", "xdpvhost-use-scc")
        role = find(objs, "ClusterRole", rb["roleRef"]["name"])
        self.assertEqual(role["rules"][0]["resourceNames"], ["xdpvhost"])
        self.assertIn({"kind": "ServiceAccount", "name": pod["serviceAccountName"],
                       "namespace": NAMESPACE}, rb["subjects"])
        self.assertEqual(pod["securityContext"]["seLinuxOptions"]["type"], "spc_t")

    def test_examples_fit_together(self):
        ex = os.path.join(KUBE, "examples")
        vm = load(os.path.join(ex, "virtualmachine.yaml"))[0]["spec"]["template"]["spec"]
        rct = load(os.path.join(ex, "resourceclaimtemplate.yaml"))[0]
        kv = load(os.path.join(ex, "kubevirt-patch.yaml"))[0]["spec"]["configuration"]
        dc = find(self.rendered["kubernetes"], "DeviceClass", "xdpvhost")
        self.assertIn("NetworkDevicesWithDRA", kv["developerConfiguration"]["featureGates"])
        bindings = kv["network"]["binding"]
        iface = [i for i in vm["domain"]["devices"]["interfaces"] if "binding" in i][0]
        self.assertIn(iface["binding"]["name"], bindings)
        binding = bindings[iface["binding"]["name"]]
        self.assertTrue(binding["sidecarImage"])
        # Live-migratable (a migration entry), without link-refresh: libvirt
        # refuses a link change on a vhostuser interface, and virt-launcher's
        # link flap would keep the migration from finalizing.
        self.assertIn("migration", binding)
        self.assertNotEqual((binding["migration"] or {}).get("method"), "link-refresh")
        self.check_hyperconverged_patch(ex, kv)
        net = [n for n in vm["networks"] if n["name"] == iface["name"]][0]["resourceClaim"]
        claim = [c for c in vm["resourceClaims"] if c["name"] == net["claimName"]][0]
        self.assertEqual(claim["resourceClaimTemplateName"], rct["metadata"]["name"])
        request = [r for r in rct["spec"]["spec"]["devices"]["requests"]
                   if r["name"] == net["requestName"]][0]
        self.assertEqual(request["exactly"]["deviceClassName"], dc["metadata"]["name"])
        # the claim selects an uplink the node config has (the plugin publishes
        # attribute xdpvhost.io/uplink = the uplink's name)
        config = json.loads(read_text(os.path.join(KUBE, "base", "config.json")))
        for sel in request["exactly"].get("selectors", []):
            m = re.search(r'device\.attributes\["xdpvhost\.io"\]\.uplink == "([^"]+)"',
                          sel["cel"]["expression"])
            self.assertIsNotNone(m, sel)
            self.assertIn(m.group(1), [u["name"] for u in config["uplinks"]])
        # queues: the port has as many queue pairs as the VM's multiqueue NIC asks for
        queues = [c["opaque"]["parameters"]["queues"] for c in rct["spec"]["spec"]["devices"]["config"]]
        self.assertEqual(queues, [vm["domain"]["cpu"]["cores"]])


# ---- the admission policies, evaluated ----------------------------------

def resource_slice(node):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-xdpvhost.io-abcde"},
            "spec": {"driver": "xdpvhost.io", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "up0"}]}}


def allocated_claim(node, devices=None, driver="xdpvhost.io"):
    """A claim allocated `driver`'s device up0 of `node` (the pool is the
    node's name), reserved for a pod, with status.devices `devices`."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "vm1-vhost", "namespace": "default",
                          "uid": "9a3c3c1e-2f7b-4d5e-8a9b-0c1d2e3f4a5b"},
             "spec": {"devices": {"requests": [{"name": "vhost-port",
                                                "exactly": {"deviceClassName": "xdpvhost"}}]}},
             "status": {"allocation": {
                 "devices": {"results": [{"request": "vhost-port", "driver": driver, "pool": node,
                                          "device": "up0"}]},
                 "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                     {"key": "metadata.name", "operator": "In", "values": [node]}]}]}},
                 "reservedFor": [{"resource": "pods", "name": "virt-launcher-vm1-x7k2p",
                                  "uid": "1e2d3c4b-5a69-4788-9a0b-c1d2e3f4a5b6"}]}}
    if devices:
        claim["status"]["devices"] = devices
    return claim


def device_status(node, driver="xdpvhost.io"):
    return {"driver": driver, "pool": node, "device": "up0",
            "networkData": {"hardwareAddress": "02:00:00:00:00:ab"}, "data": {"port": "dra-1"}}


class AdmissionPolicies(unittest.TestCase):
    """The ValidatingAdmissionPolicies keep each DRA plugin to its own
    node's ResourceSlices and claims. Their CEL is evaluated by
    check_policies.mjs (the stand-in for the API server's admission,
    around a real CEL evaluator) on requests as the API server hands them
    to admission: the plugin's own writes pass, everything else a plugin
    could do with its ClusterRole is denied with a message, and other
    users' writes are not touched."""

    @classmethod
    def setUpClass(cls):
        rendered = kustomize(os.path.join(KUBE, "overlays", "kubernetes"))
        cls.policies = [o for o in rendered if o["kind"] == "ValidatingAdmissionPolicy"]
        cls.bindings = [o for o in rendered if o["kind"] == "ValidatingAdmissionPolicyBinding"]

    def verdicts(self, requests):
        return admission.verdicts(requests, self.policies + self.bindings)

    @staticmethod
    def slice_request(name, operation, node, user=None):
        obj = resource_slice(node)
        return {"name": name, "operation": operation, "userInfo": user or plugin_user("node-a"),
                "group": "resource.k8s.io", "version": "v1", "resource": "resourceslices",
                "object": None if operation == "DELETE" else obj,
                "oldObject": None if operation == "CREATE" else obj}

    @staticmethod
    def status_request(name, old, new, user=None):
        return {"name": name, "operation": "UPDATE", "userInfo": user or plugin_user("node-a"),
                "group": "resource.k8s.io", "version": "v1", "resource": "resourceclaims",
                "subResource": "status", "object": new, "oldObject": old}

    def test_the_policies_are_bound(self):
        self.assertEqual(sorted(b["spec"]["policyName"] for b in self.bindings),
                         sorted(p["metadata"]["name"] for p in self.policies))
        for b in self.bindings:
            self.assertEqual(b["spec"]["validationActions"], ["Deny"])
        for p in self.policies:
            self.assertEqual(p["spec"]["failurePolicy"], "Fail")

    def test_resource_slices_of_its_own_node_only(self):
        scheduler = {"username": "system:kube-scheduler", "groups": ["system:authenticated"]}
        requests = [self.slice_request(f"{op.lower()} own", op, "node-a") for op in ("CREATE", "UPDATE", "DELETE")]
        requests += [self.slice_request(f"{op.lower()} other", op, "node-b") for op in ("CREATE", "UPDATE", "DELETE")]
        requests += [self.slice_request("unbound token", "CREATE", "node-a", plugin_user(None)),
                     self.slice_request("another user", "CREATE", "node-b", scheduler)]
        v = self.verdicts(requests)
        for op in ("create", "update", "delete"):
            self.assertEqual(v[f"{op} own"], "allowed")
            self.assertEqual(v[f"{op} other"], "denied by xdpvhost-dra-plugin-node-slices: the xdpvhost DRA "
                             "plugin on node node-a may not write a ResourceSlice of node node-b")
        self.assertIn("carries no node", v["unbound token"])
        self.assertEqual(v["another user"], "allowed")

    def test_claim_status_of_its_own_nodes_devices_only(self):
        own = allocated_claim("node-a")
        other_driver = device_status("node-a", driver="gpu.example.com")
        with_other = allocated_claim("node-a", [other_driver])
        moved = allocated_claim("node-a", [device_status("node-a")])
        moved["status"]["allocation"]["devices"]["results"][0]["device"] = "up1"
        unreserved = allocated_claim("node-a", [device_status("node-a")])
        del unreserved["status"]["reservedFor"]
        requests = [
            self.status_request("write", own, allocated_claim("node-a", [device_status("node-a")])),
            self.status_request("clear", allocated_claim("node-a", [device_status("node-a")]), own),
            self.status_request("beside another driver", with_other,
                                allocated_claim("node-a", [other_driver, device_status("node-a")])),
            self.status_request("another node's claim", allocated_claim("node-b"),
                                allocated_claim("node-b", [device_status("node-b")])),
            self.status_request("another driver's claim", allocated_claim("node-a", driver="gpu.example.com"),
                                allocated_claim("node-a", [device_status("node-a")],
                                                driver="gpu.example.com")),
            self.status_request("an entry for another pool", own, allocated_claim("node-a", [device_status("node-b")])),
            self.status_request("the allocation changed", own, moved),
            self.status_request("reservedFor dropped", own, unreserved),
            self.status_request("another driver's entry dropped", with_other,
                                allocated_claim("node-a", [device_status("node-a")])),
            self.status_request("an unallocated claim", {**own, "status": {}},
                                {**own, "status": {"devices": [device_status("node-a")]}}),
            self.status_request("unbound token", own, allocated_claim("node-a", [device_status("node-a")]),
                                plugin_user(None)),
            self.status_request("the claim controller", own, {**own, "status": {}},
                                {"username": "system:serviceaccount:kube-system:resource-claim-controller"}),
        ]
        v = self.verdicts(requests)
        for name in ("write", "clear", "beside another driver", "the claim controller"):
            self.assertEqual(v[name], "allowed", name)
        policy = "denied by xdpvhost-dra-plugin-node-claims: "
        for name in ("another node's claim", "another driver's claim", "an unallocated claim"):
            self.assertEqual(v[name], policy + "the xdpvhost DRA plugin on node node-a may write only the "
                             "status of claims allocated a device of that node", name)
        for name in ("the allocation changed", "reservedFor dropped"):
            self.assertEqual(v[name], policy + "the xdpvhost DRA plugin may not change a claim's allocation "
                             "or reservedFor", name)
        for name in ("an entry for another pool", "another driver's entry dropped"):
            self.assertTrue(v[name].startswith(policy + "the xdpvhost DRA plugin may write status.devices "
                                               "only for its own node's"), v[name])
        self.assertIn("carries no node", v["unbound token"])


# ---- metric names against a real scrape -----------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_plugin():
    """Families and labels (as scrape_daemon) of the DRA plugin's metrics,
    served by its own server in this process."""
    sys.path.insert(0, os.path.join(ROOT, "kubevirt", "dra_plugin"))
    from xdpvhost_dra import metrics_server, plugin_metrics
    server = metrics_server.MetricsServer(f"127.0.0.1:{free_port()}", plugin_metrics.REGISTRY).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
        return parse_exposition(urllib.request.urlopen(url, timeout=5).read().decode())
    finally:
        server.stop()


def scrape_daemon():
    """Families {name: type}, and {family: {label: {values}}} of a real
    xdpvhostd with one guest port and no uplink."""
    daemon = os.environ["XDPVHOSTD"]
    work = tempfile.mkdtemp(prefix="xdpvhost-manifests-")
    port = free_port()
    config = {"ports": [{"name": "vm1", "socket": f"{work}/vm1.sock", "mode": "server",
                         "mac": "52:54:00:00:00:01"}],
              "control": {"socket": f"{work}/control.sock"},
              "metrics": {"listen": f"127.0.0.1:{port}"}}
    with open(f"{work}/config.json", "w") as f:
        json.dump(config, f)
    log = open(f"{work}/daemon.log", "wb")
    proc = subprocess.Popen([daemon, "--config", f"{work}/config.json"], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("xdpvhostd did not serve metrics: "
                                         + read_text(f"{work}/daemon.log"))
                time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
        shutil.rmtree(work)
    return parse_exposition(text)


def parse_exposition(text):
    families, labels = {}, {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            families[m.group(1)] = m.group(2)
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? ", line)
        name = m.group(1)
        family = name if name in families else re.sub(r"_(bucket|count|sum)$", "", name)
        fam = labels.setdefault(family, {})
        for k, v in re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(3) or ""):
            fam.setdefault(k, set()).add(v)
    return families, labels


def documented_labels():
    """{family pattern (regex): {labels}} from docs/operating.md's table."""
    out = {}
    for line in read_text(os.path.join(ROOT, "docs", "operating.md")).splitlines():
        if not line.startswith("| `xdpvhost_"):
            continue
        cells = line.split("|")
        names = re.findall(r"`([^`]+)`", cells[1])
        lbls = set(re.findall(r"`(\w+)`", cells[3]))
        for n in names:
            out[("^" + re.escape(n).replace(re.escape("..."), ".*") + "$")] = lbls
    return out


def expressions():
    """(where, promql, label names used in templates) for every alert of the
    PrometheusRule and every query of the dashboard."""
    rule = load(os.path.join(KUBE, "monitoring", "prometheusrule.yaml"))[0]
    for g in rule["spec"]["groups"]:
        for r in g["rules"]:
            used = set()
            for text in r.get("annotations", {}).values():
                used |= set(re.findall(r"\$labels\.(\w+)", text))
            yield f"alert {r['alert']}", r["expr"], used
    dash = json.loads(read_text(os.path.join(KUBE, "monitoring", "xdpvhost-dashboard.json")))
    for p in dash["panels"]:
        for t in p.get("targets", []):
            yield (f"panel {p['title']!r} {t['refId']}", t["expr"],
                   set(re.findall(r"\{\{\s*(\w+)\s*\}\}", t.get("legendFormat", ""))))
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            m = re.match(r"label_values\((\w+),\s*(\w+)\)", v["query"]["query"])
            yield f"variable {v['name']}", m.group(1), {m.group(2)}


def grafana_to_promql(expr):
    return expr.replace("$__rate_interval", "5m").replace("$node", ".*")


class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.families, cls.labels = scrape_daemon()
        plugin_families, plugin_labels = scrape_plugin()
        cls.families.update(plugin_families)
        cls.labels.update(plugin_labels)
        cls.documented = documented_labels()

    def family_of(self, name):
        if name in self.families:
            return name
        base = re.sub(r"_(bucket|count|sum)$", "", name)
        if self.families.get(base) == "histogram":
            return base
        return None

    def labels_of(self, family):
        if family in self.labels:
            return set(self.labels[family]), True
        for pattern, lbls in self.documented.items():
            if re.match(pattern, family):
                return lbls, False
        return set(), False

    def test_scrape_has_the_families(self):
        # the scrape itself: port, thread and uplink families are all there
        for prefix in ("xdpvhost_port_", "xdpvhost_thread_", "xdpvhost_uplink_xsk_"):
            self.assertTrue(any(f.startswith(prefix) for f in self.families), prefix)
        self.assertIn("vm1", self.labels["xdpvhost_port_packets_total"]["port"])

    def test_expressions_name_only_exported_metrics_and_labels(self):
        count = 0
        for where, expr, templated in expressions():
            count += 1
            with self.subTest(where):
                promql = grafana_to_promql(expr)
                names = set(re.findall(r"\b(xdpvhost_[a-zA-Z0-9_]+)\b", promql))
                self.assertTrue(names, f"{where} names no xdpvhost metric")
                allowed, values = set(TARGET_LABELS), {}
                for n in names:
                    fam = self.family_of(n)
                    self.assertIsNotNone(fam, f"{where}: {n} is not exported by xdpvhostd")
                    lbls, sampled = self.labels_of(fam)
                    self.assertTrue(lbls or fam in self.labels, f"{where}: no labels known for {fam}")
                    allowed |= lbls
                    if n.endswith("_bucket"):
                        allowed.add("le")
                    if sampled:
                        for k, v in self.labels[fam].items():
                            values.setdefault(k, set()).update(v)
                used = set(templated)
                for grouping in re.findall(r"\b(?:by|without|on|ignoring)\s*\(([^)]*)\)", promql):
                    used |= {x.strip() for x in grouping.split(",") if x.strip()}
                for sel in re.findall(r"\{([^}]*)\}", promql):
                    for k, op, v in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"([^"]*)"', sel):
                        used.add(k)
                        if op in ("=", "!=") and k in values:
                            self.assertIn(v, values[k], f"{where}: {k}={v!r} never appears")
                self.assertLessEqual(used, allowed, f"{where}: labels {used - allowed} are not exported")
        self.assertGreater(count, 10)

    def test_alerts_have_for_and_what_to_do(self):
        rule = load(os.path.join(KUBE, "monitoring", "prometheusrule.yaml"))[0]
        for g in rule["spec"]["groups"]:
            for r in g["rules"]:
                with self.subTest(r["alert"]):
                    self.assertRegex(r["for"], r"^[0-9]+[smh]$")
                    self.assertIn(r["labels"]["severity"], {"info", "warning", "critical"})
                    self.assertTrue(r["annotations"]["summary"])
                    self.assertGreater(len(r["annotations"]["description"]), 80)

    def test_promtool_parses_every_expression(self):
        rule = load(os.path.join(KUBE, "monitoring", "prometheusrule.yaml"))[0]
        dash = [{"record": f"xdpvhost_dashboard:expr{i}", "expr": grafana_to_promql(e)}
                for i, (w, e, _) in enumerate(expressions()) if w.startswith("panel")]
        with tempfile.TemporaryDirectory() as d:
            for name, groups in (("alerts", rule["spec"]["groups"]),
                                 ("dashboard", [{"name": "dashboard", "rules": dash}])):
                path = os.path.join(d, f"{name}.yaml")
                with open(path, "w") as f:
                    yaml.safe_dump({"groups": groups}, f)
                r = subprocess.run([PROMTOOL, "check", "rules", path], capture_output=True, text=True)
                with self.subTest(name):
                    self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
                    self.assertIn("SUCCESS", r.stdout)

    def promtool_alert_test(self, alertname, series, quiet_at, fires_at, node):
        """Runs promtool's rule unit test of `alertname` on `series` (sampled
        every 5 minutes): silent at `quiet_at`, firing for `node` alone, with
        its annotations, at `fires_at`."""
        rule = load(os.path.join(KUBE, "monitoring", "prometheusrule.yaml"))[0]
        (alert,) = [r for g in rule["spec"]["groups"] for r in g["rules"]
                    if r.get("alert") == alertname]
        expected = {k: v.replace("{{ $labels.node }}", node) for k, v in alert["annotations"].items()}
        tests = {"rule_files": ["alerts.yaml"], "evaluation_interval": "1m", "tests": [{
            "interval": "5m",
            "input_series": [{"series": name, "values": values} for name, values in series],
            "alert_rule_test": [
                {"eval_time": quiet_at, "alertname": alertname, "exp_alerts": []},
                {"eval_time": fires_at, "alertname": alertname, "exp_alerts": [
                    {"exp_labels": {"severity": "warning", "node": node},
                     "exp_annotations": expected}]},
            ]}]}
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "alerts.yaml"), "w") as f:
                yaml.safe_dump({"groups": [{"name": "xdpvhost", "rules": [alert]}]}, f)
            with open(os.path.join(d, "tests.yaml"), "w") as f:
                yaml.safe_dump(tests, f)
            r = subprocess.run([PROMTOOL, "test", "rules", "tests.yaml"], cwd=d, capture_output=True,
                               text=True)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("SUCCESS", r.stdout)

    def test_the_fd_growth_alert_fires_on_a_leak_and_not_on_churn(self):
        """promtool's rule unit tests on XdpvhostFdsGrowing: a daemon leaking
        12 fds every 5 minutes (a slow fd leak on a periodic path) is alerted
        within 8 hours; one whose fds swing with guests coming and going, or
        sit high but flat, is not."""
        churn = " ".join(str(100 + 300 * (i % 2)) for i in range(121))
        self.promtool_alert_test("XdpvhostFdsGrowing", [
            ('xdpvhost_open_fds{node="leaky",kind="bpf_prog"}', "40+12x120"),
            ('xdpvhost_open_fds{node="leaky",kind="socket"}', "60x120"),
            ('process_max_fds{node="leaky"}', "4000x120"),
            ('xdpvhost_open_fds{node="churn",kind="eventfd"}', churn),
            ('process_max_fds{node="churn"}', "4000x120"),
            ('xdpvhost_open_fds{node="flat",kind="socket"}', "3900x120"),
            ('process_max_fds{node="flat"}', "4000x120"),
        ], quiet_at="5h", fires_at="8h", node="leaky")

    def test_the_heap_growth_alert_fires_on_a_leak_and_not_on_churn(self):
        """promtool's rule unit tests on XdpvhostHeapGrowing: a daemon whose
        heap in use grows 1 MiB every 5 minutes is alerted within 14 hours;
        one whose heap swings by 40 MiB with guests coming and going, or sits
        high but flat (its free heap growing: the allocator keeping memory),
        is not."""
        mib = 1 << 20
        churn = " ".join(str(20 * mib + 40 * mib * (i % 2)) for i in range(181))
        self.promtool_alert_test("XdpvhostHeapGrowing", [
            ('xdpvhost_heap_bytes{node="leaky",state="in_use"}', f"{8 * mib}+{mib}x180"),
            ('xdpvhost_heap_bytes{node="churn",state="in_use"}', churn),
            ('xdpvhost_heap_bytes{node="flat",state="in_use"}', f"{900 * mib}x180"),
            ('xdpvhost_heap_bytes{node="flat",state="free"}', f"{mib}+{mib}x180"),
        ], quiet_at="12h", fires_at="14h", node="leaky")

    def test_dashboard_panels(self):
        dash = json.loads(read_text(os.path.join(KUBE, "monitoring", "xdpvhost-dashboard.json")))
        exprs = " ".join(t["expr"] for p in dash["panels"] for t in p.get("targets", []))
        for family in ("xdpvhost_port_packets_total", "xdpvhost_port_drops_total", "xdpvhost_open_fds",
                       "xdpvhost_thread_iterations_total", "xdpvhost_uplink_xsk_rx_ring_full_total",
                       "xdpvhost_uplink_xsk_rx_fill_ring_empty_descs_total"):
            self.assertTrue(family in exprs, f"no panel shows {family}")
        self.assertTrue("by (node, namespace, vm, port, reason)" in exprs,
                        "no panel of drops by port and reason")
        # Every port panel names the VM too (a node's ports are told apart by VM).
        for e in (t["expr"] for p in dash["panels"] for t in p.get("targets", [])):
            if "xdpvhost_port_" in e and "sum by" in e:
                self.assertIn("namespace, vm, port", e)
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)))


if __name__ == "__main__":
    unittest.main()
