"""The sidecar's domain run by Debian's libvirt (QEMU driver, TCG) against a
real xdpvhostd: the sidecar (real process, gRPC) rewrites domain-vm1.xml for
vmi-vm1.json; libvirt's embedded QEMU driver (qemu:///embed, no daemon)
starts that domain with the vhost-user interface as the sidecar wrote it;
QEMU listens on the socket as the vhost-user server and xdpvhostd, with a
client-mode port on that path (as the DRA plugin adds it), connects.

What is changed before libvirt gets the domain, and why:
- type kvm -> qemu (TCG: this machine's /dev/kvm cannot run a stock guest),
  256 MiB of memory, no <cpu> (host-model needs KVM);
- the devices backed by files of the virt-launcher pod are dropped (the
  container disk, serial/console/guest-agent sockets, the VNC socket, the pod
  network's tap) and <resource> (virt-launcher's cgroup partition);
- the VMI's pciAddress (see VMI below);
Everything else of the interface, <memoryBacking> and <qemu:override> is
the sidecar's (no <mtu>: libvirt applies that to a host netdev a vhostuser
interface has only behind Open vSwitch, "Cannot set interface MTU on
'(null)'"; the sidecar passes the MTU as the device's host_mtu).
QEMU's command line (libvirt's log) is checked for what the sidecar asked:
a server socket at the path, 2 queues, 1024-entry rings, the MAC, host_mtu,
shared guest memory from memfd.

A second test boots a guest through that domain (the project's guest image,
tests/guest: its kernel and initramfs given to the domain's <os>, its
console on the domain's serial port) and the guest pings a peer through the
daemon: a DPDK testpmd on a second port of the daemon, in icmpecho mode,
answers. So the guest's memory table (memfd, as the sidecar asks) is taken,
its rings run, and frames flow both ways; for TCG, the test also sets the
device's MSI-X vectors to 0 (QEMU 7.2 under TCG ends at DRIVER_OK with
vhost-user and MSI-X, tests/pylib/xvtest/guest.py).

Needs root (libvirt's privileged embedded driver; it wants a user
`libvirt-qemu` to exist, which libvirt-daemon-system would create: the test
creates it if absent and removes it again) and XDPVHOSTD; the second test
also XDPVHOST_GUEST_IMAGE_DIR and dpdk-testpmd."""

import copy
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import unittest
import xml.etree.ElementTree as ET

import libvirt

import test_sidecar
from xvtest.daemon import wait_until  # tests/pylib
from xvtest.guest import parse_result
from xvtest.testpmd import Testpmd

QEMU_NS = "http://libvirt.org/schemas/domain/qemu/1.0"
GUEST_MAC, PEER_MAC = "02:00:00:00:00:01", "02:00:00:00:00:99"

# The VMI of test_sidecar without its pciAddress: 0000:02:02.0 names a slot
# behind a PCI bridge that virt-launcher's domain would have; on this bare q35
# bus 2 is a root port (slot 0 only), so libvirt places the NIC itself.
VMI = copy.deepcopy(test_sidecar.VMI)
del VMI["spec"]["domain"]["devices"]["interfaces"][1]["pciAddress"]


def runnable_here(xml, name):
    d = ET.fromstring(xml)
    d.set("type", "qemu")
    d.find("name").text = name
    d.remove(d.find("uuid"))
    mem = d.find("memory")
    mem.set("unit", "MiB")
    mem.text = "256"
    for tag in ("cpu", "resource"):
        for e in d.findall(tag):
            d.remove(e)
    devices = d.find("devices")
    for e in list(devices):
        if e.tag in ("disk", "serial", "console", "channel", "graphics") or \
                (e.tag == "interface" and e.get("type") != "vhostuser"):
            devices.remove(e)
    return ET.tostring(d, encoding="unicode")


def booting(xml, image, console_log, kernel_args):
    """The runnable domain made to boot the guest image: its kernel,
    initramfs and command line in <os>, its console (ttyS0) into a file,
    ended rather than rebooted at the guest's poweroff, and MSI-X off on the
    vhost-user NIC (TCG, see the module's docstring)."""
    ET.register_namespace("qemu", QEMU_NS)
    d = ET.fromstring(xml)
    os_el = d.find("os")
    for tag, text in (("kernel", os.path.join(image, "vmlinuz")),
                      ("initrd", os.path.join(image, "initrd.img")),
                      ("cmdline", " ".join(["console=ttyS0", "panic=-1", "loglevel=5", *kernel_args]))):
        ET.SubElement(os_el, tag).text = text
    for tag, value in (("on_reboot", "destroy"), ("on_crash", "destroy")):
        ET.SubElement(d, tag).text = value
    serial = ET.SubElement(d.find("devices"), "serial", type="file")
    ET.SubElement(serial, "source", path=console_log)
    ET.SubElement(serial, "target", port="0")
    alias = d.find("./devices/interface[@type='vhostuser']/alias").get("name")
    device = d.find(f"./{{{QEMU_NS}}}override/{{{QEMU_NS}}}device[@alias='{alias}']")
    ET.SubElement(device.find(f"{{{QEMU_NS}}}frontend"), f"{{{QEMU_NS}}}property",
                  name="vectors", type="unsigned", value="0")
    return ET.tostring(d, encoding="unicode")


class EventLoop:
    """libvirt's default event loop on a thread (the embedded driver needs one)."""

    def __init__(self):
        libvirt.virEventRegisterDefaultImpl()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    @staticmethod
    def run():
        while True:
            libvirt.virEventRunDefaultImpl()


class LibvirtDomain(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root")
        cls.created_user = False
        if subprocess.run(["getent", "passwd", "libvirt-qemu"], capture_output=True).returncode:
            subprocess.run(["useradd", "--system", "--no-create-home", "--shell",
                            "/usr/sbin/nologin", "libvirt-qemu"], check=True)
            cls.created_user = True
        cls.make_libvirt_root()
        cls.loop = EventLoop()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.libvirt_tmp, True)
        if cls.created_user:
            subprocess.run(["userdel", "libvirt-qemu"], check=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="xvlv-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = self.libvirt_root
        self.socket_root = os.path.join(self.tmp, "pod")  # the pod's claim directories
        # Nothing of the test outlives it: no QEMU (kill_qemu) and no cgroup
        # of a domain of its.
        self.addCleanup(self.check_no_cgroup_left)

    @classmethod
    def make_libvirt_root(cls):
        """The embedded driver's root, one per process (libvirt keeps the
        first path it was opened with), with its qemu.conf."""
        cls.libvirt_tmp = tempfile.mkdtemp(prefix="xvlv-root-", dir="/tmp")
        cls.libvirt_root = os.path.join(cls.libvirt_tmp, "libvirt")
        os.makedirs(os.path.join(cls.libvirt_root, "etc"))
        with open(os.path.join(cls.libvirt_root, "etc", "qemu.conf"), "w") as f:
            # No cgroups: libvirt would put a BPF device filter on the
            # domain's, a kernel object the machine keeps while the cgroup
            # lives (the soak, counting BPF programs system-wide, saw them).
            f.write('user = "root"\ngroup = "root"\ndynamic_ownership = 0\nremember_owner = 0\n'
                    'security_driver = "none"\nnamespaces = [ ]\nstdio_handler = "file"\n'
                    'cgroup_controllers = [ ]\n')

    def start_daemon(self, socket_path, more_ports=()):
        daemon = os.environ["XDPVHOSTD"]
        # As the DRA plugin adds it: client mode, as many queue pairs as the
        # claim's queues, which must cover the 2 the VM's multiqueue NIC asks
        # for (with 1, QEMU never finishes connecting and libvirt waits).
        config = {"ports": [{"name": "vm1", "socket": socket_path, "mode": "client",
                             "mac": GUEST_MAC, "queues": 2}, *more_ports],
                  "control": {"socket": os.path.join(self.tmp, "control.sock")},
                  "metrics": {"listen": ""}}
        path = os.path.join(self.tmp, "config.json")
        with open(path, "w") as f:
            json.dump(config, f)
        log = open(os.path.join(self.tmp, "daemon.log"), "wb")
        proc = subprocess.Popen([daemon, "--config", path], stdout=log, stderr=subprocess.STDOUT)

        def stop():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)
            log.close()
        self.addCleanup(stop)
        wait_until(lambda: os.path.exists(config["control"]["socket"]), 20, what="control socket")
        return config["control"]["socket"]

    def kill_qemu(self, name):
        """Every QEMU of domain `name`, found by its command line (libvirt's
        pid file goes with a destroy that may not have ended it), SIGKILLed
        and waited for."""
        marker = f"guest={name},".encode()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if marker in f.read():
                        os.kill(int(pid), signal.SIGKILL)
            except OSError:
                continue
        wait_until(lambda: not any(self.qemu_cmdline_has(p, marker)
                                   for p in filter(str.isdigit, os.listdir("/proc"))),
                   20, what=f"QEMU of {name} gone")

    @staticmethod
    def qemu_cmdline_has(pid, marker):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                return marker in f.read()
        except OSError:
            return False

    def check_no_cgroup_left(self):
        left = []
        for top, dirs, _ in os.walk("/sys/fs/cgroup"):
            left += [os.path.join(top, d) for d in dirs if "xvlv-" in d]
            dirs[:] = [d for d in dirs if "xvlv-" not in d]
        self.assertEqual(left, [], "cgroups of the test's domains")

    def port_state(self, control):
        return (self.port(control) or {}).get("state")

    @staticmethod
    def port(control, name="vm1"):
        out = subprocess.run([os.environ.get("XDPVHOSTCTL", "xdpvhostctl"), "--socket", control,
                              "--json", "port", "get", name], capture_output=True, text=True)
        return json.loads(out.stdout) if out.returncode == 0 else None

    def create(self, conn, xml, name, timeout=120):
        """The domain libvirt started from xml, or the test fails with its
        and QEMU's words."""
        result = {}

        def create():
            try:
                result["domain"] = conn.createXML(xml, 0)
            except libvirt.libvirtError as e:
                result["error"] = e

        t = threading.Thread(target=create)
        t.start()
        t.join(timeout)
        self.assertFalse(t.is_alive(), f"libvirt did not start the domain within {timeout} s")
        if "error" in result:
            log = os.path.join(self.root, "log", "qemu", f"{name}.log")
            tail = open(log).read()[-1500:] if os.path.exists(log) else ""
            self.fail(f"libvirt: {str(result['error'])[-300:]}\nQEMU's log: ...{tail}\n"
                      f"daemon: {open(os.path.join(self.tmp, 'daemon.log')).read()[-1500:]}")
        dom = result["domain"]

        def destroy():
            try:
                dom.destroy()
            except libvirt.libvirtError:
                pass  # already gone (a transient domain ends with destroy)
        self.addCleanup(destroy)
        return dom

    def sidecar_domain(self):
        """(the domain the sidecar returns for VMI, as text; the path of its
        vhost-user socket). No device metadata here: the sidecar knows the
        claims' queues only from --default-queues (2, as the daemon's port
        offers). Its gRPC is done before libvirt forks QEMU: grpcio's fork
        handlers in this process make libvirt's handshake with its child
        fail ("Unable to notify child process: Invalid argument")."""
        sock = os.path.join(self.socket_root, "vhost", "vhost-port", "vhost.sock")
        os.makedirs(os.path.dirname(sock))
        sidecar = test_sidecar.Sidecar(self.tmp, "--metadata-root", os.path.join(self.tmp, "none"),
                                       "--socket-root", self.socket_root, "--default-queues", "2")
        try:
            return sidecar.define(vmi=VMI).decode(), sock
        finally:
            sidecar.stop()

    def test_a_guest_booted_through_the_sidecars_domain_pings_through_the_daemon(self):
        image = os.environ.get("XDPVHOST_GUEST_IMAGE_DIR")
        if not image or not os.path.exists(os.path.join(image, "initrd.img")):
            self.skipTest("no guest image (XDPVHOST_GUEST_IMAGE_DIR; tests/guest/build_image.sh)")
        name = f"xvlv-{os.getpid()}-guest"
        console = os.path.join(self.tmp, "console.log")
        domain_xml, sock = self.sidecar_domain()
        self.assertIn("<source type='memfd'", domain_xml.replace('"', "'"),
                      "the sidecar gives a domain without a memory source memfd-backed memory")
        xml = booting(runnable_here(domain_xml, name), image, console,
                      [f"xv.mac={GUEST_MAC}", "xv.ip=10.99.0.1/24", "xv.run=ping,10.99.0.2,5"])
        peer_sock = os.path.join(self.tmp, "peer.sock")
        control = self.start_daemon(sock, [{"name": "peer", "socket": peer_sock, "mode": "server",
                                            "mac": PEER_MAC}])
        # The peer: testpmd answering ARP and echo requests for any address.
        peer = Testpmd("lvpeer", peer_sock, PEER_MAC, "icmpecho", self.tmp,
                       file_prefix=f"xvlv{os.getpid()}")
        peer.start()
        self.addCleanup(peer.kill)
        peer.wait_forwarding()
        conn = libvirt.open(f"qemu:///embed?root={self.root}")
        self.addCleanup(conn.close)
        self.addCleanup(self.kill_qemu, name)
        dom = self.create(conn, xml, name)

        def result():
            with open(console, errors="replace") as f:
                for line in f:
                    if line.startswith("XV-RESULT ") and '"kind":"ping"' in line:
                        return parse_result(line.strip())
            return None
        try:
            ping = wait_until(result, 240, interval=0.5, what="the guest's ping result")
        except TimeoutError:
            with open(console, errors="replace") as f:
                self.fail(f"no ping result; console: ...{f.read()[-2000:]}\n"
                          f"daemon: {open(os.path.join(self.tmp, 'daemon.log')).read()[-1500:]}")
        print(f"\nguest ping through the daemon: {ping}", flush=True)
        self.assertEqual((ping["tx"], ping["rx"], ping["rc"]), (5, 5, 0), ping)
        stats = json.loads(subprocess.run(
            [os.environ.get("XDPVHOSTCTL", "xdpvhostctl"), "--socket", control, "--json", "stats"],
            capture_output=True, text=True, check=True).stdout)
        self.assertGreaterEqual(stats["ports"]["vm1"]["rx_packets"], 5, stats["ports"]["vm1"])
        self.assertGreaterEqual(stats["ports"]["vm1"]["tx_packets"], 5, stats["ports"]["vm1"])
        # The guest powers off once its steps ran: the domain ends, QEMU's
        # socket goes, the port waits for the next QEMU.
        def ended():
            try:
                return not dom.isActive()
            except libvirt.libvirtError:
                return True  # a transient domain is gone once it ends
        wait_until(ended, 60, what="the domain ended")
        wait_until(lambda: self.port_state(control) == "waiting", 30, what="port waiting again")

    def test_libvirt_starts_the_domain_and_the_daemon_connects(self):
        name = f"xvlv-{os.getpid()}"
        domain_xml, sock = self.sidecar_domain()
        xml = runnable_here(domain_xml, name)
        control = self.start_daemon(sock)

        conn = libvirt.open(f"qemu:///embed?root={self.root}")
        self.addCleanup(conn.close)
        self.addCleanup(self.kill_qemu, name)  # if libvirt never came back
        dom = self.create(conn, xml, name)
        self.assertTrue(dom.isActive())
        # QEMU is the vhost-user server at the sidecar's path; the daemon's
        # client port connected (no guest driver runs, so it stays there).
        self.assertTrue(os.path.exists(sock))
        state = wait_until(lambda: self.port_state(control) in ("connected", "running")
                           and self.port_state(control), 30, what="port connected")
        self.assertIn(state, ("connected", "running"))
        with open(os.path.join(self.root, "log", "qemu", f"{name}.log")) as f:
            cmdline = f.read()
        self.assertRegex(cmdline, rf"-chardev socket,id=\S+,path={re.escape(sock)},server=on")
        self.assertIn("vhost-user", cmdline)
        self.assertRegex(cmdline, r"\"?queues\"?[=:]2")
        self.assertRegex(cmdline, r"rx_queue_size\"?[=:]1024")
        self.assertRegex(cmdline, r"tx_queue_size\"?[=:]1024")
        self.assertIn("02:00:00:00:00:01", cmdline)
        self.assertRegex(cmdline, r"\"share\":true|share=on")
        self.assertRegex(cmdline, r"memory-backend-memfd")
        self.assertRegex(cmdline, r"\"host_mtu\":1500|host_mtu=1500")
        # Hot-plug: an interface as the sidecar writes it (no <mtu>, which
        # libvirt refused here at hot-plug too) goes into the running domain;
        # it gets no host_mtu (an override applies at start), so its guest
        # uses 1500 until told otherwise (kubevirt/README.md).
        plugged = ET.fromstring(xml).find("./devices/interface[@type='vhostuser']")
        plugged.find("alias").set("name", "ua-fast1")
        plugged.find("mac").set("address", "02:00:00:00:00:02")
        for tag in ("address", "acpi"):
            for e in plugged.findall(tag):
                plugged.remove(e)
        sock2 = os.path.join(self.socket_root, "vhost", "vhost-port-2", "vhost.sock")
        os.makedirs(os.path.dirname(sock2))
        plugged.find("source").set("path", sock2)
        # Its port first, as the plugin's prepare comes before: QEMU's netdev
        # waits for the backend to connect before the device is added.
        subprocess.run([os.environ.get("XDPVHOSTCTL", "xdpvhostctl"), "--socket", control, "port", "add",
                        "vm2", "--socket", sock2, "--mode", "client", "--queues", "2",
                        "--mac", "02:00:00:00:00:02"], check=True, capture_output=True, timeout=20)
        attached = {}

        def attach():
            try:
                dom.attachDeviceFlags(ET.tostring(plugged, encoding="unicode"),
                                      libvirt.VIR_DOMAIN_AFFECT_LIVE)
                attached["ok"] = True
            except libvirt.libvirtError as e:
                attached["error"] = e
        t = threading.Thread(target=attach, daemon=True)
        t.start()
        t.join(60)
        self.assertEqual(attached, {"ok": True}, "hot-plug did not finish within 60 s")
        live = ET.fromstring(dom.XMLDesc(0))
        self.assertEqual(len(live.findall("./devices/interface[@type='vhostuser']")), 2)
        self.assertTrue(os.path.exists(sock2))
        dom.destroy()
        wait_until(lambda: self.port_state(control) == "waiting", 30, what="port waiting again")


if __name__ == "__main__":
    unittest.main()
