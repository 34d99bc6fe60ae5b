"""The binding sidecar (kubevirt/sidecar) as virt-launcher uses it: the real
sidecar process serves KubeVirt's hook API on a unix socket; this test calls
Info, OnDefineDomain and Shutdown over gRPC with the generated stubs, on a
KubeVirt-shaped domain (domain-vm1.xml) and VMI (vmi-vm1.json), with and
without the claim's device metadata file mounted, and validates every domain
it gets back with libvirt's virt-xml-validate (offline RelaxNG schemas of
libvirt-clients).

Environment: XDPVHOST_HOOK_STUBS (generated stubs), PYTHONPATH including
kubevirt/sidecar."""

import copy
import json
import logging
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import grpc

from xdpvhost_sidecar.stubs import info_grpc, info_pb2, v1alpha3_grpc, v1alpha3_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
DOMAIN = open(os.path.join(HERE, "domain-vm1.xml"), "rb").read()
VMI = json.load(open(os.path.join(HERE, "vmi-vm1.json")))
TEMPLATE_META = "resourceclaimtemplates/vhost/vhost-port/xdpvhost.io-metadata.json"

# The interface the upstream binding writes for this VM (kubevirt/INTERFACES.md,
# Domain XML rewrite; metadata socket path and MTU filled in per case).
EXPECTED_INTERFACE = """
<interface type="vhostuser">
  <mac address="02:00:00:00:00:01"></mac>
  <source type="unix" mode="server" path="{path}"></source>
  <model type="virtio"></model>
  <driver queues="{queues}" rx_queue_size="1024" tx_queue_size="1024"></driver>
  <acpi index="2"></acpi>
  <alias name="ua-fast0"></alias>
  <address type="pci" domain="0x0000" bus="0x02" slot="0x02" function="0x0"></address>
</interface>"""


def metadata_stream(path="/var/run/xdpvhost/vhost/vhost-port/vhost.sock", mtu=9000, extra=True,
                    queues=None, mac=None):
    """A KEP-5304 metadata file as the Go helper writes it: the object once
    per version (here an unknown newer one first), pretty-printed, each
    followed by a newline."""
    attrs = {"vhost-user-path": {"string": path}}
    if mtu is not None:
        attrs["mtu"] = {"int": mtu}
    if queues is not None:
        attrs["queues"] = {"int": queues}
    obj = {"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
           "metadata": {"name": "virt-launcher-vm1-x7k2p-vhost-q9wzt", "namespace": "default",
                        "uid": "6f1c2d9e-0a4b-4c57-9d1e-2b7f3a8c5e10", "generation": 1,
                        "creationTimestamp": None},
           "podClaimName": "vhost",
           "requests": [{"name": "vhost-port", "devices": [
               {"driver": "xdpvhost.io", "pool": "node-a", "name": "uplink0",
                "attributes": attrs}]}]}
    if mac is not None:
        obj["requests"][0]["devices"][0]["networkData"] = {"hardwareAddress": mac}
    newer = dict(obj, apiVersion="metadata.resource.k8s.io/v1beta9")
    objs = [newer, obj] if extra else [obj]
    return "".join(json.dumps(o, indent=2) + "\n" for o in objs)


def canonical(element):
    for e in element.iter():
        e.tail = None
        if e.text is not None and not e.text.strip():
            e.text = None
    return ET.canonicalize(ET.tostring(element))


def interfaces(domain):
    return domain.findall("./devices/interface")


class Sidecar:
    def __init__(self, root, *args):
        self.socket = os.path.join(root, "hooks", "xdpvhost.sock")
        self.log_path = os.path.join(root, "sidecar.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "xdpvhost_sidecar", "--socket", self.socket, *args],
            stdout=self.log, stderr=subprocess.STDOUT)
        self.channel = grpc.insecure_channel("unix:" + self.socket)
        try:
            grpc.channel_ready_future(self.channel).result(timeout=20)
        except grpc.FutureTimeoutError:
            self.stop()
            raise AssertionError(f"sidecar did not serve {self.socket}:\n{self.output()}")
        self.info = info_grpc.InfoStub(self.channel)
        self.callbacks = v1alpha3_grpc.CallbacksStub(self.channel)

    def define(self, domain=DOMAIN, vmi=VMI):
        r = self.callbacks.OnDefineDomain(
            v1alpha3_pb2.OnDefineDomainParams(domainXML=domain, vmi=json.dumps(vmi).encode()),
            timeout=60)
        return r.domainXML

    def output(self):
        self.log.flush()
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            return f.read()

    def stop(self):
        self.channel.close()
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
        self.log.close()


class SidecarTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="xdpvhost-sidecar-")
        self.addCleanup(self.tmp.cleanup)
        self.root = self.tmp.name
        self.meta_root = os.path.join(self.root, "dra-device-attributes")

    def start(self, *extra):
        s = Sidecar(self.root, "--metadata-root", self.meta_root, *extra)
        self.addCleanup(s.stop)
        return s

    def write_metadata(self, rel=TEMPLATE_META, text=None):
        path = os.path.join(self.meta_root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(metadata_stream() if text is None else text)
        return path

    def assert_valid_domain(self, xml):
        path = os.path.join(self.root, "out.xml")
        with open(path, "wb") as f:
            f.write(xml)
        r = subprocess.run(["virt-xml-validate", path, "domain"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, f"virt-xml-validate:\n{r.stdout}{r.stderr}\n"
                                          f"{xml.decode()}")

    def assert_vhostuser(self, xml, path, mtu, queues=2):
        """queues: the VM's two (one per vCPU), or 1 where the port's are not
        known (no device metadata: the claim's default caps them)."""
        domain = ET.fromstring(xml)
        fast0 = [i for i in interfaces(domain) if i.find("alias").get("name") == "ua-fast0"]
        self.assertEqual(len(fast0), 1, xml.decode())
        self.assertEqual(canonical(fast0[0]),
                         canonical(ET.fromstring(EXPECTED_INTERFACE.format(path=path, mtu=mtu, queues=queues))))
        access = domain.findall("./memoryBacking/access")
        self.assertEqual([a.get("mode") for a in access], ["shared"])
        # The MTU as QEMU's host_mtu of the device (libvirt refuses <mtu> on
        # a vhostuser interface without Open vSwitch).
        q = "{http://libvirt.org/schemas/domain/qemu/1.0}"
        props = domain.findall(f"./{q}override/{q}device[@alias='ua-fast0']/{q}frontend/{q}property")
        self.assertEqual([(p.get("name"), p.get("type"), p.get("value")) for p in props],
                         [("host_mtu", "unsigned", str(mtu))])
        # Memory xdpvhostd maps: hugepages or memfd, never libvirt's file.
        backing = domain.find("./memoryBacking")
        sources = [x.get("type") for x in backing.findall("source")]
        self.assertTrue(backing.find("hugepages") is not None or sources in (["memfd"], ["file"]),
                        xml.decode())
        return domain

    def test_info(self):
        s = self.start()
        r = s.info.Info(info_pb2.InfoParams(), timeout=5)
        self.assertEqual(list(r.versions), ["v1alpha3"])
        self.assertEqual([(h.name, h.priority) for h in r.hookPoints],
                         [("OnDefineDomain", 0), ("Shutdown", 0)])
        self.assertTrue(r.name)

    def test_input_domain_is_valid(self):
        """The fixture itself is a domain libvirt accepts (else the checks
        of the rewritten one prove little)."""
        self.assert_valid_domain(DOMAIN)

    def test_with_metadata(self):
        meta = self.write_metadata(text=metadata_stream(path="/var/run/xdpvhost/m/r/vhost.sock"))
        s = self.start()
        xml = s.define()
        domain = self.assert_vhostuser(xml, "/var/run/xdpvhost/m/r/vhost.sock", 9000)
        self.assert_valid_domain(xml)
        # the pod network's interface and the rest of the domain are untouched
        before = ET.fromstring(DOMAIN)
        default = [i for i in interfaces(domain) if i.find("alias").get("name") == "ua-default"]
        self.assertEqual([canonical(i) for i in default], [canonical(interfaces(before)[0])])
        self.assertEqual(canonical(domain.find("metadata")), canonical(before.find("metadata")))
        self.assertEqual(len(domain.find("devices")), len(before.find("devices")) + 1)
        self.assertIn(f"vhost-user socket /var/run/xdpvhost/m/r/vhost.sock, mtu 9000, queues 2, "
                      f"mac 02:00:00:00:00:01, from device metadata {meta}", s.output())

    def test_without_metadata(self):
        s = self.start()
        xml = s.define()
        self.assert_vhostuser(xml, "/var/run/xdpvhost/vhost/vhost-port/vhost.sock", 1500, 1)
        self.assert_valid_domain(xml)
        out = s.output()
        self.assertIn("WARNING", out)
        self.assertIn("vhost-user socket /var/run/xdpvhost/vhost/vhost-port/vhost.sock, mtu 1500",
                      out)
        self.assertIn(f"device metadata {os.path.join(self.meta_root, TEMPLATE_META)} is not "
                      "mounted in this container", out)

    def test_socket_root_and_default_mtu_options(self):
        s = self.start("--socket-root", "/run/xv", "--default-mtu", "1400")
        self.assert_vhostuser(s.define(), "/run/xv/vhost/vhost-port/vhost.sock", 1400, 1)

    def test_named_claim(self):
        vmi = copy.deepcopy(VMI)
        vmi["spec"]["resourceClaims"] = [{"name": "vhost", "resourceClaimName": "shared-port"}]
        s = self.start()
        self.assert_vhostuser(s.define(vmi=vmi),
                              "/var/run/xdpvhost/shared-port/vhost-port/vhost.sock", 1500, 1)
        self.write_metadata("resourceclaims/shared-port/vhost-port/xdpvhost.io-metadata.json")
        self.assert_vhostuser(s.define(vmi=vmi),
                              "/var/run/xdpvhost/vhost/vhost-port/vhost.sock", 9000)

    def test_existing_interface_of_that_alias_is_replaced(self):
        domain = DOMAIN.replace(b'<alias name="ua-default">', b'<alias name="ua-fast0">')
        s = self.start()
        xml = s.define(domain=domain)
        self.assertEqual(len(interfaces(ET.fromstring(xml))), 1)
        self.assert_vhostuser(xml, "/var/run/xdpvhost/vhost/vhost-port/vhost.sock", 1500, 1)
        self.assert_valid_domain(xml)

    def test_existing_memory_backing_is_kept(self):
        domain = DOMAIN.replace(b'<os>', b'<memoryBacking><hugepages></hugepages>'
                                b'<access mode="private"></access></memoryBacking><os>')
        s = self.start()
        xml = s.define(domain=domain)
        out = self.assert_vhostuser(xml, "/var/run/xdpvhost/vhost/vhost-port/vhost.sock", 1500,
                                    1)
        self.assertIsNotNone(out.find("./memoryBacking/hugepages"))
        self.assertIsNone(out.find("./memoryBacking/source"), "hugepages need no source")
        self.assert_valid_domain(xml)

    def test_guest_memory_without_a_source_comes_from_memfd(self):
        """libvirt backs memory with no source with a shared file in its
        state directory, which the daemon refuses to map: the VM would run
        with its link up and no traffic. The sidecar names memfd; a source
        the domain names (memfd, file) stays, and so do other children."""
        s = self.start()
        for backing, wanted in (
                (b'', [("source", "memfd"), ("access", "shared")]),
                (b'<memoryBacking><nosharepages/><discard/></memoryBacking>',
                 [("nosharepages", None), ("source", "memfd"), ("access", "shared"), ("discard", None)]),
                (b'<memoryBacking><source type="memfd"/></memoryBacking>',
                 [("source", "memfd"), ("access", "shared")]),
                (b'<memoryBacking><source type="file"/><access mode="private"/></memoryBacking>',
                 [("source", "file"), ("access", "shared")])):
            with self.subTest(backing):
                xml = s.define(domain=DOMAIN.replace(b'<os>', backing + b'<os>'))
                got = [(c.tag, c.get("type") or c.get("mode")) for c in ET.fromstring(xml).find("memoryBacking")]
                self.assertEqual(got, wanted)
                self.assert_valid_domain(xml)
        self.assertEqual(s.output().count("guest memory from memfd, shared"), 2)

    def test_json_logs_carry_the_vms_namespace_and_name(self):
        """--log-format json: one JSON object per line (time, level, logger,
        message), the events of a VM's domain with its namespace and name;
        and under systemd (stderr the journal's stream) each line starts
        with its syslog priority. KubeVirt passes the sidecar no arguments:
        the image's $XDPVHOST_SIDECAR_LOG_FORMAT does the same."""
        self.write_metadata()
        for how in ("flag", "environment"):
            with self.subTest(how):
                if how == "flag":
                    s = self.start("--log-format", "json")
                else:
                    os.environ["XDPVHOST_SIDECAR_LOG_FORMAT"] = "json"
                    try:
                        s = self.start()
                    finally:
                        del os.environ["XDPVHOST_SIDECAR_LOG_FORMAT"]
                s.define()
                self.assert_json_lines(s)
                s.stop()

    def test_a_log_format_it_does_not_know_is_refused(self):
        env = dict(os.environ, XDPVHOST_SIDECAR_LOG_FORMAT="xml")
        r = subprocess.run([sys.executable, "-m", "xdpvhost_sidecar", "--socket",
                            os.path.join(self.root, "s.sock")], env=env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("log format 'xml' (--log-format or $XDPVHOST_SIDECAR_LOG_FORMAT)", r.stderr)

    def assert_json_lines(self, s):
        lines = [line for line in s.output().splitlines() if line.strip()]
        events = [json.loads(line) for line in lines]  # every line is one
        for e in events:
            self.assertLessEqual({"time", "level", "logger", "message"}, set(e), e)
            self.assertRegex(e["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        about = [e for e in events if "vhost-user socket" in e["message"]]
        self.assertEqual(len(about), 1, events)
        self.assertEqual((about[0]["namespace"], about[0]["vm"], about[0]["level"]), ("default", "vm1", "info"))
        self.assertTrue(all("vm" not in e for e in events if "serving" in e["message"].lower()))

    def test_under_systemd_lines_carry_their_journal_priority(self):
        sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "kubevirt", "dra_plugin"))
        from xdpvhost_dra import log_setup
        with open(os.path.join(self.root, "journal"), "w+") as stream:
            st = os.fstat(stream.fileno())
            os.environ["JOURNAL_STREAM"] = f"{st.st_dev}:{st.st_ino}"
            try:
                log_setup.setup(logging.DEBUG, "json", stream)
                logging.getLogger("t").warning("careful")
                logging.getLogger("t").info("fine")
            finally:
                del os.environ["JOURNAL_STREAM"]
                logging.getLogger().handlers[:] = []
            stream.seek(0)
            lines = stream.read().splitlines()
        self.assertEqual([line[:3] for line in lines], ["<4>", "<6>"])
        self.assertEqual(json.loads(lines[0][3:])["message"], "careful")

    def test_single_queue_without_multiqueue(self):
        vmi = copy.deepcopy(VMI)
        vmi["spec"]["domain"]["devices"]["networkInterfaceMultiqueue"] = False
        vmi["spec"]["domain"]["devices"]["useVirtioTransitional"] = True
        del vmi["spec"]["domain"]["devices"]["interfaces"][1]["macAddress"]
        s = self.start()
        iface = [i for i in interfaces(ET.fromstring(s.define(vmi=vmi)))
                 if i.get("type") == "vhostuser"][0]
        self.assertEqual(iface.find("driver").get("queues"), "1")
        self.assertEqual(iface.find("model").get("type"), "virtio-transitional")
        self.assertIsNone(iface.find("mac"))

    def test_other_binding_leaves_domain_as_it_came(self):
        s = self.start("--binding-name", "someone-else")
        self.assertEqual(s.define(), DOMAIN)

    def test_queues_the_port_offers_cap_the_vms_multiqueue_nic(self):
        """The VM's two vCPUs ask for two queue pairs: a port that offers one
        gives the NIC one (QEMU would wait for the second forever), a port
        that offers more leaves it at two."""
        self.write_metadata(text=metadata_stream(queues=1))
        s = self.start()
        iface = [i for i in interfaces(ET.fromstring(s.define())) if i.get("type") == "vhostuser"][0]
        self.assertEqual(iface.find("driver").get("queues"), "1")
        self.assertIn("multiqueue NIC would have 2 queue pairs (one per vCPU), its port offers 1",
                      s.output())
        self.write_metadata(text=metadata_stream(queues=4))
        self.assert_vhostuser(s.define(), "/var/run/xdpvhost/vhost/vhost-port/vhost.sock", 9000)

    def test_without_metadata_the_claims_default_queues_cap_the_vms_multiqueue_nic(self):
        """Without the device metadata (KubeVirt builds that do not mount it)
        the port's queue pairs are not known: the VM's two vCPUs would ask for
        two pairs of a port that offers the claim's default of one, and QEMU
        would wait for the second forever. The fallback caps the NIC at
        --default-queues (1 unless the cluster's claims say more)."""
        s = self.start()
        iface = [i for i in interfaces(ET.fromstring(s.define())) if i.get("type") == "vhostuser"][0]
        self.assertEqual(iface.find("driver").get("queues"), "1")
        self.assertIn("its port offers 1 as far as the sidecar knows (no device metadata: "
                      "--default-queues)", s.output())
        s.stop()
        s = self.start("--default-queues", "4")
        iface = [i for i in interfaces(ET.fromstring(s.define())) if i.get("type") == "vhostuser"][0]
        self.assertEqual(iface.find("driver").get("queues"), "2")

    def test_the_ports_mac_is_the_nics(self):
        """The port lets the guest send from its MAC only (the device
        metadata's networkData.hardwareAddress, which the DRA plugin sets):
        the NIC gets it where the VMI sets none, and a VMI that asks for
        another MAC is refused rather than given a NIC whose frames are all
        dropped."""
        s = self.start()
        self.write_metadata(text=metadata_stream(mac="02:00:00:00:00:01"))
        self.assert_vhostuser(s.define(), "/var/run/xdpvhost/vhost/vhost-port/vhost.sock", 9000)
        no_mac = copy.deepcopy(VMI)
        del no_mac["spec"]["domain"]["devices"]["interfaces"][1]["macAddress"]
        self.write_metadata(text=metadata_stream(mac="02:5E:10:AA:00:07"))
        iface = [i for i in interfaces(ET.fromstring(s.define(vmi=no_mac)))
                 if i.get("type") == "vhostuser"][0]
        self.assertEqual(iface.find("mac").get("address"), "02:5e:10:aa:00:07")
        with self.assertRaises(grpc.RpcError) as e:
            s.define()  # the VMI asks for 02:00:00:00:00:01
        self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("interface fast0: macAddress 02:00:00:00:00:01, but its port was prepared with "
                      "MAC 02:5e:10:aa:00:07", e.exception.details())
        # Without a MAC in the metadata (a plugin before fixed MACs) the VMI's is used, or none.
        self.write_metadata(text=metadata_stream())
        iface = [i for i in interfaces(ET.fromstring(s.define(vmi=no_mac)))
                 if i.get("type") == "vhostuser"][0]
        self.assertIsNone(iface.find("mac"))

    def test_bad_metadata_is_refused_not_guessed(self):
        s = self.start()
        cases = {
            "no mtu": metadata_stream(mtu=None),
            "queues out of range": metadata_stream(queues=0),
            "queues not an int": metadata_stream().replace('"mtu": {', '"queues": {"int": "2"}, "mtu": {'),
            "not JSON": "{not json",
            "mtu out of range": metadata_stream(mtu=65536),
            "no known version": metadata_stream().replace("v1alpha1", "v0"),
            "hardwareAddress not a MAC": metadata_stream(mac="02:00:00:00:00"),
            "networkData not an object": metadata_stream().replace(
                '"attributes": {', '"networkData": "02:00:00:00:00:01", "attributes": {'),
        }
        for what, text in cases.items():
            with self.subTest(what):
                self.write_metadata(text=text)
                with self.assertRaises(grpc.RpcError) as e:
                    s.define()
                self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn("device metadata", e.exception.details())

    def test_vmi_errors(self):
        s = self.start()
        no_claim = copy.deepcopy(VMI)
        no_claim["spec"]["networks"][1] = {"name": "fast0", "pod": {}}
        bad_model = copy.deepcopy(VMI)
        bad_model["spec"]["domain"]["devices"]["interfaces"][1]["model"] = "e1000"
        long_names = copy.deepcopy(VMI)
        long_names["spec"]["networks"][1]["resourceClaim"]["requestName"] = "r" * 63
        long_names["spec"]["resourceClaims"][0]["name"] = "vhost" + "c" * 50
        long_names["spec"]["networks"][1]["resourceClaim"]["claimName"] = "vhost" + "c" * 50
        for what, vmi, text in (("no resourceClaim", no_claim, "no resourceClaim"),
                                ("model", bad_model, "'e1000' is not supported"),
                                ("sun_path", long_names, "longer than a unix socket path")):
            with self.subTest(what):
                with self.assertRaises(grpc.RpcError) as e:
                    s.define(vmi=vmi)
                self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
                self.assertIn(text, e.exception.details())

    def test_every_vmi_value_is_checked_before_use(self):
        """Names become directories of the socket's and metadata's paths, so
        they pass the DRA plugin's own rules (xdpvhost_dra.names); numbers,
        MACs and PCI addresses are checked by type and range. Each refusal
        is a binding error that names the field, never an unhandled error
        (gRPC UNKNOWN), and no file outside the metadata root is opened."""
        s = self.start()
        self.write_metadata()

        def vmi_with(change):
            vmi = copy.deepcopy(VMI)
            change(vmi["spec"], vmi["spec"]["domain"]["devices"]["interfaces"][1],
                   vmi["spec"]["networks"][1]["resourceClaim"])
            return vmi

        def set_claim_name(spec, _, ref, value):
            spec["resourceClaims"][0]["name"] = value
            ref["claimName"] = value

        def named_claim(spec, value):
            spec["resourceClaims"][0] = {"name": "vhost", "resourceClaimName": value}

        cases = {
            "claimName ..": (lambda sp, i, r: set_claim_name(sp, i, r, ".."),
                             "resourceClaim.claimName '..' is not a DNS label"),
            "claimName with a slash": (lambda sp, i, r: set_claim_name(sp, i, r, "a/../../etc"),
                                       "resourceClaim.claimName"),
            "claimName a number": (lambda sp, i, r: set_claim_name(sp, i, r, 7),
                                   "resourceClaim.claimName must be a string"),
            "requestName with a slash": (lambda sp, i, r: r.update(requestName="vhost-port/x"),
                                         "resourceClaim.requestName"),
            "requestName upper case": (lambda sp, i, r: r.update(requestName="Port"),
                                       "resourceClaim.requestName 'Port' is not a DNS label"),
            "resourceClaimName": (lambda sp, i, r: named_claim(sp, "../claim"),
                                  "resourceClaimName '../claim' is not a DNS subdomain"),
            "resourceClaimTemplateName": (
                lambda sp, i, r: sp["resourceClaims"][0].update(resourceClaimTemplateName="a_b"),
                "resourceClaimTemplateName 'a_b' is not a DNS subdomain"),
            "interface name": (lambda sp, i, r: (i.update(name="fast.0"),
                                                  sp["networks"][1].update(name="fast.0")),
                               "interface name 'fast.0' is not a KubeVirt interface name"),
            "acpiIndex text": (lambda sp, i, r: i.update(acpiIndex="two"),
                               "interface fast0: acpiIndex 'two' is not a non-negative integer"),
            "acpiIndex negative": (lambda sp, i, r: i.update(acpiIndex=-1), "acpiIndex -1"),
            "acpiIndex fraction": (lambda sp, i, r: i.update(acpiIndex=1.5), "acpiIndex 1.5"),
            "cores text": (lambda sp, i, r: sp["domain"]["cpu"].update(cores="four"),
                           "spec.domain.cpu.cores 'four' is not a non-negative integer"),
            "threads boolean": (lambda sp, i, r: sp["domain"]["cpu"].update(threads=True),
                                "spec.domain.cpu.threads True"),
            "cpu not an object": (lambda sp, i, r: sp["domain"].update(cpu=[2]),
                                  "spec.domain.cpu is list, not an object"),
            "macAddress": (lambda sp, i, r: i.update(macAddress="02:00:00:00:00"),
                           "interface fast0: macAddress '02:00:00:00:00' is not a MAC address"),
            "macAddress multicast": (lambda sp, i, r: i.update(macAddress="01:00:5E:00:00:01"),
                                     "interface fast0: macAddress 01:00:5e:00:00:01 is a multicast"),
            "pciAddress slot": (lambda sp, i, r: i.update(pciAddress="0000:02:20.0"),
                                "interface fast0: pciAddress '0000:02:20.0' is not"),
            "pciAddress sign": (lambda sp, i, r: i.update(pciAddress="0000:02:-1.0"),
                                "pciAddress '0000:02:-1.0'"),
            "pciAddress number": (lambda sp, i, r: i.update(pciAddress=2),
                                  "interface fast0: pciAddress 2 is not a string"),
            "networks not a list": (lambda sp, i, r: sp.update(networks={"fast0": {}}),
                                    "spec.networks is dict, not a list"),
            "binding not an object": (lambda sp, i, r: i.update(binding="vhostuser"),
                                      "interface binding is str, not an object"),
        }
        for what, (change, text) in cases.items():
            with self.subTest(what):
                with self.assertRaises(grpc.RpcError) as e:
                    s.define(vmi=vmi_with(change))
                self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT,
                                 e.exception.details())
                self.assertIn(text, e.exception.details())
        self.assertNotIn("Traceback", s.output())

        # What passes is used as the domain needs it: a MAC written with '-'
        # in libvirt's colon form, acpiIndex 0 as "none".
        xml = s.define(vmi=vmi_with(lambda sp, i, r: i.update(macAddress="02-00-00-00-00-AB",
                                                                acpiIndex=0)))
        fast0 = [i for i in interfaces(ET.fromstring(xml))
                 if i.find("alias").get("name") == "ua-fast0"][0]
        self.assertEqual(fast0.find("mac").get("address"), "02:00:00:00:00:ab")
        self.assertIsNone(fast0.find("acpi"))

    def test_fallback_matches_the_dra_plugin(self):
        """The convention the sidecar falls back to is the DRA plugin's own
        default (kubevirt/dra_plugin): same container root, same MTU."""
        import xdpvhost_sidecar
        from xdpvhost_dra import options
        from xdpvhost_dra.socket_dir import SOCKET_FILE

        defaults = options.parser().parse_args(["--node-name", "node-a"])
        self.assertEqual(defaults.container_socket_root,
                         xdpvhost_sidecar.DEFAULT_CONTAINER_SOCKET_ROOT)
        self.assertEqual(defaults.default_mtu, xdpvhost_sidecar.DEFAULT_MTU)
        self.assertEqual(SOCKET_FILE, xdpvhost_sidecar.SOCKET_FILE_NAME)

    def test_shutdown_stops_the_sidecar(self):
        s = self.start()
        s.callbacks.Shutdown(v1alpha3_pb2.ShutdownParams(), timeout=5)
        self.assertEqual(s.proc.wait(10), 0)
        self.assertFalse(os.path.exists(s.socket))

    def test_sigterm_stops_the_sidecar(self):
        s = self.start()
        s.proc.terminate()
        self.assertEqual(s.proc.wait(10), 0)
        self.assertFalse(os.path.exists(s.socket))


if __name__ == "__main__":
    unittest.main()
