"""QEMU test guests against a vhost-user backend, and their results.

The guest is the image made by tests/guest/build_image.sh (Debian cloud
kernel + busybox initramfs). Its /init configures the virtio-net NIC from
``xv.*`` kernel command line parameters, runs the test steps, prints
machine-readable lines on the serial console and powers off:

    XV-BOOTED t=<uptime s>            /init started
    XV-MODULES t=<uptime s>           virtio modules loaded
    XV-RESULT {json}                  one result (has "kind" and "t")
    XV-READY <what> t=<uptime s>      a server step is about to listen
    XV-ERROR <text>                   something in the guest went wrong
    XV-STEP n=<i> rc=<rc> t=<s>       step i finished
    XV-DONE rc=<rc> t=<s>             all steps done; poweroff follows

Use::

    with Guest(image, "/tmp/x/vhost.sock", ip="10.77.0.2/24",
               run=["ping,10.77.0.1,5"]) as g:
        g.start()
        rc = g.wait_done(timeout=120)
        print(g.results("ping"))

tests/guest/qemu_guest.py is the command line around it (and keeps these
names importable as `qemu_guest`). QEMU is $XV_QEMU, else
qemu-system-x86_64. Standard library only.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Sequence

from .process import Child, die_with_parent, read_text

__all__ = ["ENV_ACCEL", "ENV_QEMU", "FEATURE_NAMES", "Guest", "GuestError", "GuestExited",
           "GuestTimeout", "choose_accel", "decode_features", "features_hex", "iperf3_summary",
           "mac_for", "parse_result", "probe_kvm", "qemu_binary", "qemu_version"]

ENV_QEMU = "XV_QEMU"                  # the QEMU binary (default qemu-system-x86_64)
ENV_ACCEL = "XV_GUEST_ACCEL"          # auto | kvm | tcg

# virtio-net / virtio feature bits as the Linux guest shows them in
# /sys/class/net/IF/device/features (character i = bit i, negotiated set).
FEATURE_NAMES = {
    0: "CSUM", 1: "GUEST_CSUM", 2: "CTRL_GUEST_OFFLOADS", 3: "MTU", 5: "MAC",
    6: "GSO", 7: "GUEST_TSO4", 8: "GUEST_TSO6", 9: "GUEST_ECN", 10: "GUEST_UFO",
    11: "HOST_TSO4", 12: "HOST_TSO6", 13: "HOST_ECN", 14: "HOST_UFO",
    15: "MRG_RXBUF", 16: "STATUS", 17: "CTRL_VQ", 18: "CTRL_RX",
    19: "CTRL_VLAN", 20: "CTRL_RX_EXTRA", 21: "GUEST_ANNOUNCE", 22: "MQ",
    23: "CTRL_MAC_ADDR", 24: "NOTIFY_ON_EMPTY", 27: "ANY_LAYOUT",
    28: "RING_INDIRECT_DESC", 29: "RING_EVENT_IDX", 30: "PROTOCOL_FEATURES",
    32: "VERSION_1", 33: "ACCESS_PLATFORM", 34: "RING_PACKED", 35: "IN_ORDER",
    36: "ORDER_PLATFORM", 37: "SR_IOV", 38: "NOTIFICATION_DATA",
    39: "NOTIF_CONFIG_DATA", 40: "RING_RESET", 54: "GUEST_USO4",
    55: "GUEST_USO6", 56: "HOST_USO", 57: "HASH_REPORT", 59: "GUEST_HDRLEN",
    60: "RSS", 61: "RSC_EXT", 62: "STANDBY", 63: "SPEED_DUPLEX",
}

LINE_RE = re.compile(r"^(XV-[A-Z]+)(?: (.*))?$")


class GuestError(Exception):
    """The guest or QEMU did not do what was waited for."""


class GuestTimeout(GuestError):
    pass


class GuestExited(GuestError):
    pass


def decode_features(bits: str) -> list[str]:
    """Names of the set bits of a /sys/.../device/features string."""
    return [FEATURE_NAMES.get(i, f"BIT{i}") for i, c in enumerate(bits.strip()) if c == "1"]


def features_hex(bits: str) -> str:
    value = sum(1 << i for i, c in enumerate(bits.strip()) if c == "1")
    return f"0x{value:016x}"


def iperf3_summary(result: dict) -> dict:
    """Figures of an XV-RESULT kind=iperf3 line: Mbit/s, retransmits, UDP loss."""
    data = result.get("iperf3") or {}
    out: dict = {"rc": result.get("rc"), "role": result.get("role")}
    if "error" in data:
        out["error"] = data["error"]
    end = data.get("end", {})
    if "sum_sent" in end:
        out["sent_mbps"] = round(end["sum_sent"].get("bits_per_second", 0) / 1e6, 1)
        out["received_mbps"] = round(end.get("sum_received", {}).get("bits_per_second", 0) / 1e6, 1)
        out["retransmits"] = end["sum_sent"].get("retransmits")
    if "sum" in end:  # UDP
        s = end["sum"]
        out["mbps"] = round(s.get("bits_per_second", 0) / 1e6, 1)
        out["lost_percent"] = s.get("lost_percent")
        out["jitter_ms"] = s.get("jitter_ms")
    return out


def parse_result(line: str) -> dict:
    """The JSON of an "XV-RESULT {...}" console line; a nic result gains
    feature_names and features_hex."""
    body = line[len("XV-RESULT "):]
    try:
        r = json.loads(body)
    except ValueError as e:
        return {"kind": "malformed", "line": line, "error": str(e)}
    if r.get("kind") == "nic" and "features" in r:
        r["feature_names"] = decode_features(r["features"])
        r["features_hex"] = features_hex(r["features"])
    return r


def mac_for(name: str) -> str:
    h = hashlib.sha256(name.encode()).digest()
    return "52:54:00:%02x:%02x:%02x" % (h[0], h[1], h[2])


def _onoff(value) -> str:
    if isinstance(value, str):
        return value
    return "on" if value else "off"


def qemu_binary() -> str:
    return os.environ.get(ENV_QEMU, "qemu-system-x86_64")


def qemu_version() -> str:
    try:
        out = subprocess.run([qemu_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0] if out else "unknown"


_ACCEL_CACHE: dict[str, tuple[str, str]] = {}


def probe_kvm(image: str, timeout: float = 20.0, quiet: bool = False) -> tuple[bool, str]:
    """Whether KVM can run the stock guest kernel here: boot it with -accel kvm
    and see whether /init starts within timeout. Cached in IMAGE/accel-probe.json
    (keyed by host kernel and QEMU version). Returns (usable, reason)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm not accessible"
    key = f"{os.uname().release} {qemu_version()} {_stamp_key(image)}"
    cache = os.path.join(image, "accel-probe.json")
    try:
        with open(cache) as f:
            c = json.load(f)
        if c.get("key") == key:
            return bool(c["kvm"]), c["reason"] + " (cached)"
    except (OSError, ValueError, KeyError):
        pass
    g = Guest(image, None, name="kvm-probe", accel="kvm", quiet=True,
              workdir=tempfile.mkdtemp(prefix="xv-kvm-probe-"))
    usable, reason = False, ""
    t0 = time.monotonic()
    try:
        g.start()
        m = g.wait_for(r"^XV-BOOTED t=([\d.]+)", timeout=timeout)
        usable = True
        reason = f"kernel reached /init at t={m.group(1)}s in {time.monotonic() - t0:.1f}s"
    except GuestExited as e:
        msgs = [l for l in g.qemu_log().splitlines()[1:] if l.strip()]
        errs = [l for l in msgs if "error" in l.lower()] or msgs[-1:]
        reason = f"QEMU exited (rc={g.returncode}): {errs[0] if errs else ''}"
    except GuestTimeout:
        reason = f"kernel did not reach /init within {timeout:.0f}s"
    finally:
        g.kill()
        shutil.rmtree(g.workdir, ignore_errors=True)
    try:
        with open(cache + ".tmp", "w") as f:
            json.dump({"key": key, "kvm": usable, "reason": reason}, f)
        os.replace(cache + ".tmp", cache)
    except OSError:
        pass
    if not quiet:
        print(f"qemu_guest: KVM probe: {'usable' if usable else 'not usable'}: {reason}", file=sys.stderr)
    return usable, reason


def choose_accel(image: str, requested: str | None = None) -> tuple[str, str]:
    """('kvm'|'tcg', reason). requested/XV_GUEST_ACCEL: auto, kvm or tcg."""
    req = requested or os.environ.get(ENV_ACCEL, "auto")
    if req in ("kvm", "tcg"):
        return req, "requested"
    if image in _ACCEL_CACHE:
        return _ACCEL_CACHE[image]
    ok, reason = probe_kvm(image, quiet=True)
    choice = ("kvm", "KVM probe: " + reason) if ok else ("tcg", "KVM probe failed: " + reason)
    _ACCEL_CACHE[image] = choice
    return choice


def _stamp_key(image: str) -> str:
    try:
        with open(os.path.join(image, "image.stamp")) as f:
            return json.load(f).get("key", "")
    except (OSError, ValueError):
        return ""


class Guest(Child):
    """One QEMU guest booted from the test image.

    image     directory made by build_image.sh (vmlinuz, initrd.img)
    socket    vhost-user socket path, or None for a guest without a NIC
    server    True: QEMU listens on socket (the backend connects as client);
              QEMU then blocks until the backend connects. False: QEMU connects.
    reconnect QEMU client mode: seconds between reconnect attempts (QEMU then
              also starts when the backend is not there yet)
    mac, ip (ADDR/PREFIX), peer, mtu, gw, neigh (["IP@MAC", ...]),
    offload ("tx=off,sg=off"), queues (combined channels set in the guest):
              guest NIC configuration (kernel parameters xv.*)
    run       steps "scenario,arg,..." (see xv.sh), cmd: shell snippet(s);
              all run in order (runs first, then cmds) until one fails
    netdev_queues  queue pairs of the vhost-user netdev (mq=on when > 1)
    mrg_rxbuf, event_idx, indirect_desc, csum, guest_csum, ...: device
              properties (True/False or "on"/"off"); device_opts: any others
    accel     "auto" (probe KVM once, else TCG), "kvm" or "tcg"
    """

    def __init__(self, image: str, socket_path: str | None, *, name: str = "guest",
                 server: bool = False, reconnect: int | None = None,
                 mac: str | None = None, ip: str | None = None, peer: str | None = None,
                 mtu: int | None = None, gw: str | None = None,
                 neigh: Sequence[str] = (), offload: str | None = None,
                 queues: int | None = None, run: Sequence[str] = (),
                 cmd: str | Sequence[str] | None = None, netdev_queues: int = 1,
                 smp: int | None = None, mem: str = "512M",
                 mrg_rxbuf=None, event_idx=None, indirect_desc=None, csum=None,
                 guest_csum=None, host_tso=None, guest_tso=None,
                 device_opts: dict | None = None, vectors: int | None = None,
                 accel: str | None = None, allow_reboot: bool = False,
                 linkwait: int | None = None, debug: bool = False,
                 kernel_args: Sequence[str] = (),
                 qemu_args: Sequence[str] = (), workdir: str | None = None,
                 echo=None, quiet: bool = False):
        self.image = os.path.abspath(image)
        self.socket_path = socket_path
        self.name = name
        self.server = server
        self.reconnect = reconnect
        self.mac = (mac or mac_for(name)).lower()
        self.ip, self.peer, self.mtu, self.gw = ip, peer, mtu, gw
        self.neigh, self.offload, self.queues = list(neigh), offload, queues
        self.run_steps = list(run)
        self.cmds = [cmd] if isinstance(cmd, str) else list(cmd or [])
        self.netdev_queues = netdev_queues
        self.smp = smp or max(1, netdev_queues)
        self.mem = mem
        self.device_opts: dict[str, str] = {}
        for k, v in (("mrg_rxbuf", mrg_rxbuf), ("event_idx", event_idx),
                     ("indirect_desc", indirect_desc), ("csum", csum),
                     ("guest_csum", guest_csum), ("host_tso4", host_tso),
                     ("host_tso6", host_tso), ("guest_tso4", guest_tso),
                     ("guest_tso6", guest_tso)):
            if v is not None:
                self.device_opts[k] = _onoff(v)
        for k, v in (device_opts or {}).items():
            self.device_opts[k] = _onoff(v)
        self.vectors = vectors
        self.requested_accel = accel
        self.accel: str | None = None
        self.accel_reason = ""
        self.allow_reboot = allow_reboot
        self.linkwait, self.debug = linkwait, debug
        self.kernel_args = list(kernel_args)
        self.qemu_args = list(qemu_args)
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"xv-guest-{name}-")
        os.makedirs(self.workdir, exist_ok=True)
        self.console_log = os.path.join(self.workdir, f"{name}.console.log")
        self.stderr_log = os.path.join(self.workdir, f"{name}.qemu.log")
        self.qmp_path = os.path.join(self.workdir, f"{name}.qmp")
        self.echo = echo          # a file object to copy the console to, or None
        self.quiet = quiet
        self.proc: subprocess.Popen | None = None
        self.cmdline: list[str] = []
        self._pos = 0
        self._partial = ""
        self._lines: list[str] = []
        self._stderr_f = None
        self.started_at: float | None = None
        self.line_index = 0

    # ----- command line -----------------------------------------------------
    def kernel_cmdline(self) -> str:
        a = ["console=ttyS0", "panic=-1", "loglevel=5"] + self.kernel_args
        if self.ip:
            a.append(f"xv.ip={self.ip}")
        if self.socket_path:
            a.append(f"xv.mac={self.mac}")
        for k, v in (("peer", self.peer), ("mtu", self.mtu), ("gw", self.gw),
                     ("offload", self.offload), ("queues", self.queues),
                     ("linkwait", self.linkwait)):
            if v is not None:
                a.append(f"xv.{k}={v}")
        if self.neigh:
            a.append("xv.neigh=" + ",".join(self.neigh))
        if self.debug:
            a.append("xv.debug=1")
        for step in self.run_steps:
            if re.search(r"\s", step):
                raise ValueError(f"run step {step!r}: use commas, not spaces, between arguments")
            a.append(f"xv.run={step}")
        for c in self.cmds:
            a.append("xv.cmd=" + base64.b64encode(c.encode()).decode())
        line = " ".join(a)
        if len(line) >= 2048:
            raise ValueError(f"kernel command line too long ({len(line)} bytes, max 2047)")
        return line

    def build_cmdline(self) -> list[str]:
        if self.accel is None:
            self.accel, self.accel_reason = choose_accel(self.image, self.requested_accel)
        kvm = self.accel == "kvm"
        c = [qemu_binary(), "-name", self.name, "-M", "pc", "-accel", self.accel,
             "-cpu", "host" if kvm else "max", "-smp", str(self.smp), "-m", self.mem,
             "-object", f"memory-backend-memfd,id=mem,size={self.mem},share=on",
             "-numa", "node,memdev=mem",
             "-nodefaults", "-no-user-config", "-display", "none", "-monitor", "none",
             "-serial", f"file:{self.console_log}",
             "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
             "-kernel", os.path.join(self.image, "vmlinuz"),
             "-initrd", os.path.join(self.image, "initrd.img"),
             "-append", self.kernel_cmdline()]
        if not self.allow_reboot:
            c.append("-no-reboot")
        if self.socket_path:
            chardev = f"socket,id=chr0,path={self.socket_path}"
            if self.server:
                chardev += ",server=on,wait=off"
            elif self.reconnect is not None:
                chardev += f",reconnect={self.reconnect}"
            netdev = "vhost-user,id=net0,chardev=chr0"
            dev = f"virtio-net-pci,netdev=net0,mac={self.mac}"
            if self.netdev_queues > 1:
                netdev += f",queues={self.netdev_queues}"
                dev += ",mq=on"
            vectors = self.vectors
            if vectors is None and not kvm:
                # QEMU 7.2 under TCG segfaults at DRIVER_OK with vhost-user
                # and MSI-X: legacy INTx only.
                vectors = 0
            if vectors is None and self.netdev_queues > 1:
                vectors = 2 * self.netdev_queues + 2
            if vectors is not None:
                dev += f",vectors={vectors}"
            for k, v in self.device_opts.items():
                dev += f",{k}={v}"
            c += ["-chardev", chardev, "-netdev", netdev, "-device", dev]
        c += self.qemu_args
        return c

    # ----- life cycle -------------------------------------------------------
    def start(self) -> "Guest":
        for f in ("vmlinuz", "initrd.img"):
            if not os.path.exists(os.path.join(self.image, f)):
                raise GuestError(f"{self.image}/{f} missing: run build_image.sh first")
        self.cmdline = self.build_cmdline()
        for p in (self.console_log, self.qmp_path):
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        open(self.console_log, "w").close()
        self._pos, self._partial, self._lines = 0, "", []
        self._stderr_f = open(self.stderr_log, "w")
        self._stderr_f.write(shlex.join(self.cmdline) + "\n")
        self._stderr_f.flush()
        self.log(f"accel={self.accel} ({self.accel_reason}); console {self.console_log}")
        if self.server and self.socket_path:
            self.log(f"QEMU listens on {self.socket_path}; the guest boots once the backend connects")
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(self.cmdline, stdin=subprocess.DEVNULL,
                                     stdout=self._stderr_f, stderr=subprocess.STDOUT,
                                     preexec_fn=die_with_parent)
        return self

    def log(self, msg: str):
        if not self.quiet:
            print(f"[{self.name}] {msg}", file=sys.stderr, flush=True)

    def kill(self, grace: float = 3.0):
        """Stop QEMU (SIGTERM, SIGKILL after grace seconds). Idempotent."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.poll()
        if self._stderr_f:
            self._stderr_f.close()
            self._stderr_f = None

    close = kill

    def sigkill(self):
        """SIGKILL QEMU at once, as a crash would (no orderly vhost-user
        teardown), then what kill() does. Idempotent."""
        if self.alive():
            self.proc.kill()
            self.proc.wait()
        self.kill()

    def __enter__(self) -> "Guest":
        return self

    def __exit__(self, *exc):
        self.kill()
        return False

    def __del__(self):
        try:
            if self.proc and self.proc.poll() is None:
                self.proc.kill()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # ----- console ----------------------------------------------------------
    def poll(self) -> int:
        """Read new console output; returns the number of complete lines."""
        try:
            with open(self.console_log, "rb") as f:
                f.seek(self._pos)
                data = f.read()
        except FileNotFoundError:
            data = b""
        if data:
            self._pos += len(data)
            text = data.decode("utf-8", errors="replace")
            if self.echo:
                self.echo.write(text.replace("\r", ""))
                self.echo.flush()
            text = self._partial + text
            parts = text.replace("\r", "").split("\n")
            self._partial = parts.pop()
            self._lines.extend(parts)
        return len(self._lines)

    def lines(self) -> list[str]:
        self.poll()
        return list(self._lines)

    def console(self) -> str:
        self.poll()
        return "\n".join(self._lines + [self._partial])

    def tail(self, n: int = 30) -> str:
        return "\n".join(self.lines()[-n:])

    def qemu_log(self) -> str:
        return read_text(self.stderr_log)

    def wait_for(self, pattern: str, timeout: float = 60.0, since: int = 0) -> re.Match:
        """Wait until a console line (index >= since) matches the regex; returns
        the match (its line index is in .line_index of the guest)."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        i = since
        while True:
            n = self.poll()
            while i < n:
                m = rx.search(self._lines[i])
                if m:
                    self.line_index = i
                    return m
                i += 1
            if not self.alive():
                n = self.poll()
                if i < n:
                    continue
                raise GuestExited(self._explain(f"QEMU exited (rc={self.returncode}) before {pattern!r}"))
            if time.monotonic() >= deadline:
                raise GuestTimeout(self._explain(f"no {pattern!r} within {timeout:.0f}s"))
            time.sleep(0.05)

    def _explain(self, what: str) -> str:
        return (f"{self.name}: {what}\n--- console tail ({self.console_log}) ---\n{self.tail(25)}"
                f"\n--- qemu ({self.stderr_log}) ---\n{self.qemu_log()[-1500:]}")

    def wait_socket(self, timeout: float = 30.0):
        """Server mode: wait until QEMU listens on the vhost-user socket."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.socket_path and os.path.exists(self.socket_path):
                return
            if not self.alive():
                raise GuestExited(self._explain("QEMU exited before creating its socket"))
            time.sleep(0.05)
        raise GuestTimeout(self._explain(f"socket {self.socket_path} not created within {timeout}s"))

    def wait_booted(self, timeout: float = 60.0, since: int = 0) -> float:
        """Uptime (s) at which /init started."""
        return float(self.wait_for(r"^XV-BOOTED t=([\d.]+)", timeout, since).group(1))

    def wait_result(self, kind: str, timeout: float = 60.0, since: int = 0) -> dict:
        """Wait for the next XV-RESULT of this kind and return it."""
        i = since
        deadline = time.monotonic() + timeout
        while True:
            self.wait_for(r"^XV-RESULT ", max(0.0, deadline - time.monotonic()), i)
            i = self.line_index + 1
            r = parse_result(self._lines[self.line_index])
            if r.get("kind") == kind:
                return r

    def wait_done(self, timeout: float = 120.0, exit_timeout: float = 15.0) -> int:
        """Wait for XV-DONE and for QEMU to exit; returns the guest's rc."""
        m = self.wait_for(r"^XV-DONE rc=(\d+)", timeout)
        if self.proc:
            try:
                self.proc.wait(exit_timeout)
            except subprocess.TimeoutExpired:
                self.log("QEMU did not exit after poweroff; killing it")
                self.kill()
        self.poll()
        return int(m.group(1))

    # ----- results ----------------------------------------------------------
    def results(self, kind: str | None = None) -> list[dict]:
        out = [parse_result(l) for l in self.lines() if l.startswith("XV-RESULT ")]
        return [r for r in out if kind is None or r.get("kind") == kind]

    def errors(self) -> list[str]:
        return [l for l in self.lines() if l.startswith("XV-ERROR")]

    def boot_time(self) -> float | None:
        for l in self.lines():
            m = re.match(r"^XV-BOOTED t=([\d.]+)", l)
            if m:
                return float(m.group(1))
        return None

    def features(self) -> list[str]:
        nic = self.results("nic")
        return nic[-1]["feature_names"] if nic else []

    def summary(self) -> dict:
        rc = None
        for l in self.lines():
            m = re.match(r"^XV-DONE rc=(\d+)", l)
            if m:
                rc = int(m.group(1))
        res = self.results()
        for r in res:
            if r.get("kind") == "iperf3":
                r["summary"] = iperf3_summary(r)
                r.pop("iperf3", None)
        return {"name": self.name, "accel": self.accel, "boot_s": self.boot_time(),
                "rc": rc, "qemu_rc": self.returncode, "errors": self.errors(),
                "results": res, "console": self.console_log}

    # ----- QMP --------------------------------------------------------------
    def qmp(self, command: str, timeout: float = 10.0, **arguments) -> dict:
        """Run one QMP command (e.g. "system_reset", "quit"); returns the reply."""
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(self.qmp_path)
            f = s.makefile("rwb")

            def recv():
                while True:
                    line = f.readline()
                    if not line:
                        raise GuestError("QMP connection closed")
                    msg = json.loads(line)
                    if "event" not in msg:
                        return msg
            recv()  # greeting
            for req in ({"execute": "qmp_capabilities"},
                        {"execute": command, **({"arguments": arguments} if arguments else {})}):
                f.write(json.dumps(req).encode() + b"\n")
                f.flush()
                reply = recv()
                if "error" in reply:
                    raise GuestError(f"QMP {req['execute']}: {reply['error']}")
            return reply
        finally:
            s.close()
