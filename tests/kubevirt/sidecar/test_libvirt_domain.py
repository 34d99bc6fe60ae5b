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

Needs root (libvirt's privileged embedded driver; it wants a user
`libvirt-qemu` to exist, which libvirt-daemon-system would create: the test
creates it if absent and removes it again) and XDPVHOSTD."""

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
        cls.loop = EventLoop()

    @classmethod
    def tearDownClass(cls):
        if cls.created_user:
            subprocess.run(["userdel", "libvirt-qemu"], check=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="xvlv-", dir="/tmp")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.root = os.path.join(self.tmp, "libvirt")
        os.makedirs(os.path.join(self.root, "etc"))
        with open(os.path.join(self.root, "etc", "qemu.conf"), "w") as f:
            # No cgroups: libvirt would put a BPF device filter on the
            # domain's, a kernel object the machine keeps while the cgroup
            # lives (the soak, counting BPF programs system-wide, saw them).
            f.write('user = "root"\ngroup = "root"\ndynamic_ownership = 0\nremember_owner = 0\n'
                    'security_driver = "none"\nnamespaces = [ ]\nstdio_handler = "file"\n'
                    'cgroup_controllers = [ ]\n')
        # Nothing of the test outlives it: no QEMU (kill_qemu) and no cgroup
        # of a domain of its.
        self.addCleanup(self.check_no_cgroup_left)

    def start_daemon(self, socket_path):
        daemon = os.environ["XDPVHOSTD"]
        # As the DRA plugin adds it: client mode, as many queue pairs as the
        # claim's queues, which must cover the 2 the VM's multiqueue NIC asks
        # for (with 1, QEMU never finishes connecting and libvirt waits).
        config = {"ports": [{"name": "vm1", "socket": socket_path, "mode": "client",
                             "mac": "02:00:00:00:00:01", "queues": 2}],
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
        out = subprocess.run([os.environ.get("XDPVHOSTCTL", "xdpvhostctl"), "--socket", control,
                              "--json", "port", "get", "vm1"], capture_output=True, text=True)
        return json.loads(out.stdout).get("state") if out.returncode == 0 else None

    def test_libvirt_starts_the_domain_and_the_daemon_connects(self):
        socket_root = os.path.join(self.tmp, "pod")
        sock = os.path.join(socket_root, "vhost", "vhost-port", "vhost.sock")
        os.makedirs(os.path.dirname(sock))
        # No device metadata here: the sidecar knows the claims' queues only
        # from --default-queues (2, as the daemon's port below offers).
        sidecar = test_sidecar.Sidecar(self.tmp, "--metadata-root", os.path.join(self.tmp, "none"),
                                       "--socket-root", socket_root, "--default-queues", "2")
        self.addCleanup(sidecar.stop)
        name = f"xvlv-{os.getpid()}"
        xml = runnable_here(sidecar.define(vmi=VMI), name)
        # Done with gRPC before libvirt forks QEMU: grpcio's fork handlers in
        # this process make libvirt's handshake with its child fail
        # ("Unable to notify child process: Invalid argument").
        sidecar.stop()
        control = self.start_daemon(sock)

        conn = libvirt.open(f"qemu:///embed?root={self.root}")
        self.addCleanup(conn.close)
        self.addCleanup(self.kill_qemu, name)  # if libvirt never came back
        result = {}

        def create():
            try:
                result["domain"] = conn.createXML(xml, 0)
            except libvirt.libvirtError as e:
                result["error"] = e

        t = threading.Thread(target=create)
        t.start()
        t.join(120)
        self.assertFalse(t.is_alive(), "libvirt did not start the domain within 120 s")
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
        sock2 = os.path.join(socket_root, "vhost", "vhost-port-2", "vhost.sock")
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
