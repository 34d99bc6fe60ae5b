"""The metrics listener of a running xdpvhostd: /metrics parsed as the
Prometheus text format by a strict parser (xvtest.prom) with the families and
conventions documented, counters that match the traffic two DPDK testpmd
guests sent (compared with stats.get and with testpmd's own counts),
/healthz readiness, HTTP behaviour (404, 405, HEAD, keep-alive, a stalled
client), IPv6, and a listener that cannot be opened. The series budget: an
idle port costs at most 30 series, breakdowns appear once they count, and
metrics.zero_breakdowns (set by a SIGHUP reload) lists them all."""

import http.client
import json
import os
import signal
import socket
import threading
import time
import unittest

import ctltest
from xvtest import prom
from xvtest.procfs import accepted_tcp_connections, listening_tcp_sockets
from xvtest.testpmd import taken_mismatch
from xvtest.waiting import wait_until

MAC1, MAC2 = "52:54:00:00:50:01", "52:54:00:00:50:02"
PORT = ctltest.METRICS_PORT + 1

PORT_COUNTERS = {
    "xdpvhost_port_kicks_total": "kicks",
    "xdpvhost_port_interrupts_total": "interrupts",
    "xdpvhost_port_interrupts_suppressed_total": "interrupts_suppressed",
}
FAMILIES = {
    "xdpvhost_build_info": "gauge",
    "xdpvhost_start_time_seconds": "gauge",
    "xdpvhost_port_info": "gauge",
    "xdpvhost_port_state": "gauge",
    "xdpvhost_port_packets_total": "counter",
    "xdpvhost_port_bytes_total": "counter",
    "xdpvhost_port_drops_total": "counter",
    "xdpvhost_port_kicks_total": "counter",
    "xdpvhost_port_interrupts_total": "counter",
    "xdpvhost_port_interrupts_suppressed_total": "counter",
    "xdpvhost_port_queue_errors_total": "counter",
    "xdpvhost_port_busy_seconds_total": "counter",
    "xdpvhost_thread_info": "gauge",
    "xdpvhost_thread_state": "gauge",
    "xdpvhost_thread_busy_poll_microseconds": "gauge",
    "xdpvhost_thread_heartbeat_misses_total": "counter",
    "xdpvhost_thread_longest_silence_seconds": "gauge",
    "xdpvhost_thread_iterations_total": "counter",
    "xdpvhost_thread_busy_seconds_total": "counter",
    "xdpvhost_thread_sleeps_total": "counter",
    "xdpvhost_thread_wakeups_total": "counter",
    "xdpvhost_thread_commands_total": "counter",
    "xdpvhost_thread_drops_total": "counter",
    "xdpvhost_thread_burst_frames": "histogram",
    "xdpvhost_uplink_info": "gauge",
    "xdpvhost_uplink_packets_total": "counter",
    "xdpvhost_uplink_busy_seconds_total": "counter",
    "xdpvhost_uplink_xsk_rx_dropped_total": "counter",
    "xdpvhost_uplink_xsk_rx_ring_full_total": "counter",
    "xdpvhost_uplink_xdp_frames_total": "counter",
}


def http_get(path, method="GET", port=PORT, host="127.0.0.1"):
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request(method, path)
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    return r.status, dict(r.getheaders()), body


def hold_a_slot(source, half_head, stop, port=PORT):
    """One attacking connection from `source`: a request every 0.3 s (or half
    a request head, sent once), taking a slot again whenever the server
    closes it."""
    while not stop.is_set():
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1,
                                         source_address=(source, 0))
        except OSError:
            stop.wait(0.05)
            continue
        with s:
            try:
                if half_head:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHo")
                while not stop.is_set():
                    if not half_head:
                        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
                    try:
                        if not s.recv(4096):
                            break  # closed by the server
                    except socket.timeout:
                        pass  # a half head: nothing comes while it holds the slot
                    stop.wait(0.3)
            except OSError:
                pass


def scrape(port=PORT):
    status, headers, body = http_get("/metrics", port=port)
    assert status == 200, (status, body)
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8", headers
    return prom.parse(body)


# What an idle port may cost (docs/operating.md, "Series budget").
IDLE_PORT_SERIES_BUDGET = 30
# Breakdown families: a series appears once it has counted
# (metrics.zero_breakdowns: every one from the start).
BREAKDOWNS = ("xdpvhost_port_drops_total", "xdpvhost_port_offload_refused_total",
              "xdpvhost_port_mac_refused_total", "xdpvhost_port_queue_packets_total")


def series_of_port(families, port):
    """{family: number of series} labelled port=`port`."""
    counts = {}
    for name, fam in families.items():
        n = sum(1 for _, labels, _ in fam["samples"] if labels.get("port") == port)
        if n:
            counts[name] = n
    return counts


def breakdown(families, name, port, label):
    """{label value: sample value} of a breakdown family for one port."""
    return {l[label]: v for n, l, v in families[name]["samples"] if l.get("port") == port}


# The daemon answers /metrics from a body rendered at most this long before
# (kExpositionMaxAge, daemon/metrics/metrics_service.hpp).
EXPOSITION_MAX_AGE_S = 1.0


def scrape_after_change(port=PORT):
    """A scrape that shows a change made just before it."""
    time.sleep(EXPOSITION_MAX_AGE_S)
    return scrape(port)


def pipelined_bodies(path, count, port=PORT):
    """`count` GETs of `path` sent at once on one connection; their bodies."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * count)
        data, bodies = b"", []
        while len(bodies) < count:
            end = data.find(b"\r\n\r\n")
            if end >= 0:
                head = data[:end].decode()
                length = int(head.lower().split("content-length: ")[1].split("\r\n")[0])
                if len(data) >= end + 4 + length:
                    bodies.append(data[end + 4:end + 4 + length])
                    data = data[end + 4 + length:]
                    continue
            chunk = s.recv(1 << 16)
            if not chunk:
                raise AssertionError(f"closed after {len(bodies)} of {count} replies")
            data += chunk
        return bodies


class Metrics(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        prom.self_test()
        cls.dir = ctltest.workdir("metrics")
        cls.socks = [os.path.join(cls.dir, "vm1.sock"), os.path.join(cls.dir, "vm2.sock")]
        cls.daemon = ctltest.checked_daemon(cls.dir, {
            "ports": [{"name": "vm1", "socket": cls.socks[0], "mac": MAC1},
                      {"name": "vm2", "socket": cls.socks[1], "mac": MAC2}],
            "metrics": {"listen": f"127.0.0.1:{PORT}"},
        }).start()

    @classmethod
    def tearDownClass(cls):
        assert cls.daemon.stop() == 0, cls.daemon.tail()

    def test_exposition_is_strict_text_format_with_conventions(self):
        families = scrape()
        for name, type_ in FAMILIES.items():
            self.assertIn(name, families)
            self.assertEqual(families[name]["type"], type_, name)
        for name, fam in families.items():
            # The process families keep the Prometheus client conventions' names.
            self.assertTrue(name.startswith("xdpvhost_") or name.startswith("process_"), name)
            self.assertTrue(fam["help"], name)
            if fam["type"] == "counter":
                self.assertTrue(name.endswith("_total"), name)
            else:
                self.assertFalse(name.endswith("_total"), name)
        self.assertEqual(prom.value(families, "xdpvhost_build_info", version="0.1.0"), 1)
        self.assertLess(abs(prom.value(families, "xdpvhost_start_time_seconds") - time.time()),
                        24 * 3600)
        self.assertEqual(prom.value(families, "xdpvhost_port_info", port="vm1", mac=MAC1,
                                    mode="server", mac_source="config", mac_policy="fixed"), 1)
        for port in ("vm1", "vm2"):
            states = {l["state"]: v for n, l, v in families["xdpvhost_port_state"]["samples"]
                      if l["port"] == port}
            self.assertEqual(sum(states.values()), 1)
            # No frame dropped yet: no reason listed.
            self.assertEqual(breakdown(families, "xdpvhost_port_drops_total", port, "reason"), {})
        self.assertEqual(families["xdpvhost_uplink_info"]["samples"], [])  # no uplinks here
        # The metrics listener answers anybody who reaches it: no sample
        # carries a port's socket path (a VM's claim directory).
        for name, fam in families.items():
            for _, labels, _ in fam["samples"]:
                self.assertNotIn("socket", labels, name)
                for value in labels.values():
                    self.assertNotIn(self.dir, value, name)

    def test_http_behaviour(self):
        status, _, body = http_get("/nothing")
        self.assertEqual(status, 404)
        status, headers, body = http_get("/metrics", method="HEAD")
        self.assertEqual((status, body), (200, ""))
        self.assertGreater(int(headers["Content-Length"]), 1000)
        status, headers, _ = http_get("/metrics", method="POST")
        self.assertEqual(status, 405)
        self.assertEqual(headers["Allow"], "GET, HEAD")
        # Keep-alive: several scrapes on one connection.
        c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=10)
        for _ in range(3):
            c.request("GET", "/metrics")
            r = c.getresponse()
            prom.parse(r.read().decode())
            self.assertEqual(r.status, 200)
        c.close()
        # Pipelined scrapes are answered from one render (and so are other
        # clients' within a second of it): the bodies are the same bytes.
        bodies = pipelined_bodies("/metrics", 20)
        self.assertEqual(len(set(bodies)), 1)
        prom.parse(bodies[0].decode())
        # A stalled client (half a request) and an oversize head delay nobody.
        stalled = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        stalled.sendall(b"GET /metrics HTTP/1.1\r\nHo")
        big = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        big.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 20000 + b"\r\n\r\n")
        self.assertTrue(big.recv(100).startswith(b"HTTP/1.1 431 "))
        big.close()
        scrape()
        stalled.close()

    def test_healthz(self):
        status, _, body = http_get("/healthz")
        self.assertEqual((status, body), (200, "ok\n"))
        sock = os.path.join(self.dir, "vm3.sock")
        self.daemon.call("port.add", name="vm3", socket=sock, mac="52:54:00:00:50:03")
        self.assertEqual(http_get("/healthz")[0], 200)
        os.unlink(sock)  # someone removed the port's socket: no frontend can connect
        status, _, body = http_get("/healthz")
        self.assertEqual(status, 503)
        self.assertIn("port vm3", body)
        self.assertIn(sock, body)
        self.daemon.call("port.remove", name="vm3")
        self.assertEqual(http_get("/healthz")[0], 200)
        # A client-mode port waiting for its frontend is ready.
        self.daemon.call("port.add", name="vm4", socket=os.path.join(self.dir, "vm4.sock"),
                         mac="52:54:00:00:50:04", mode="client")
        self.assertEqual(http_get("/healthz")[0], 200)
        self.daemon.call("port.remove", name="vm4")

    def test_a_slot_attack_locks_out_no_probe_and_no_scrape(self):
        """Other pods take every connection slot of the listener (reachable
        from any pod with hostNetwork) and keep them: eight client addresses
        (127.0.0.2-9, loopback) with four connections each, each sending a
        request every 0.3 s or half a head, and reconnecting at once when
        closed. Readiness probes and scrapes from another address are all
        served meanwhile."""
        stop = threading.Event()
        attackers = [threading.Thread(target=hold_a_slot, args=(f"127.0.0.{2 + i // 4}", i % 2, stop))
                     for i in range(32)]
        for t in attackers:
            t.start()
        try:
            wait_until(lambda: accepted_tcp_connections(self.daemon.pid, PORT) >= 32,
                       what="every connection slot taken by the attackers")
            for _ in range(10):
                status, _, body = http_get("/healthz")
                self.assertEqual((status, body), (200, "ok\n"))
                scrape()
                time.sleep(0.2)
        finally:
            stop.set()
            for t in attackers:
                t.join(10)

    def test_an_idle_port_costs_at_most_30_series(self):
        """16 idle ports, four queue pairs each: every one costs the same
        few series, none of them a breakdown."""
        names = [f"idle{i}" for i in range(16)]
        for i, name in enumerate(names):
            self.daemon.call("port.add", name=name, socket=os.path.join(self.dir, f"{name}.sock"),
                             mac=f"52:54:00:00:51:{i:02x}", queues=4)
        try:
            families = scrape_after_change()
            counts = [series_of_port(families, name) for name in names]
            print(f"\nseries of an idle port: {sum(counts[0].values())} "
                  f"({', '.join(f'{k} {n}' for k, n in sorted(counts[0].items()))})")
            for name, c in zip(names, counts):
                self.assertLessEqual(sum(c.values()), IDLE_PORT_SERIES_BUDGET, (name, c))
                self.assertEqual(c, counts[0], name)
                self.assertEqual(set(c) & set(BREAKDOWNS), set(), name)
            # Every family is still there for the dashboards, with its HELP.
            for name in BREAKDOWNS:
                self.assertIn(name, families)
        finally:
            for name in names:
                self.daemon.call("port.remove", name=name)

    def test_scrapes_and_probes_thousands_of_times_hold_nothing(self):
        """What Prometheus and the kubelet do for months: 2000 scrapes and
        /healthz probes, each on a new connection, and 2000 readiness and
        liveness probes over the control socket (health, status). Every fd
        by kind and the heap are counted before and after. (The body is
        rendered at most once a second, so this renders it a few times
        only: the render itself is not what runs thousands of times.)"""
        before = self.daemon.settled_resources()
        start = time.monotonic()
        for i in range(2000):
            scrape()
            self.assertEqual(http_get("/healthz")[0], 200)
            self.assertTrue(self.daemon.call("health")["healthy"])
            self.daemon.call("status")
        after = self.daemon.settled_resources()
        print(f"\n2000 rounds in {time.monotonic() - start:.1f} s; fds {before['fd_kinds']} -> "
              f"{after['fd_kinds']}; RssAnon {before['anon_kb']} -> {after['anon_kb']} kB")
        self.assertEqual(after["fd_kinds"], before["fd_kinds"])
        self.assertLess(after["anon_kb"] - before["anon_kb"], 2048, "the heap grew")

    def test_uplink_families(self):
        """An uplink whose interface does not exist (yet): listed, link absent, queues unbound."""
        self.daemon.call("uplink.add", name="up0", interface=ctltest.ABSENT_IF, queues=[0, 3])
        try:
            f = scrape_after_change()
            v = lambda name, **l: prom.value(f, name, **l)  # noqa: E731
            self.assertEqual(v("xdpvhost_uplink_info", uplink="up0", interface=ctltest.ABSENT_IF,
                               bind="auto"), 1)
            self.assertEqual(v("xdpvhost_uplink_link_state", uplink="up0", state="absent"), 1)
            self.assertEqual(v("xdpvhost_uplink_link_state", uplink="up0", state="up"), 0)
            for q in (0, 3):
                self.assertEqual(v("xdpvhost_uplink_queue_info", uplink="up0", queue=q,
                                   bind_mode="unbound", napi_id=0), 1)
                for d in ("rx", "tx"):
                    self.assertEqual(v("xdpvhost_uplink_packets_total", uplink="up0", queue=q,
                                       direction=d), 0)
                for stat in ("rx_dropped", "rx_invalid_descs", "tx_invalid_descs", "rx_ring_full",
                             "rx_fill_ring_empty_descs", "tx_ring_empty_descs"):
                    self.assertEqual(v(f"xdpvhost_uplink_xsk_{stat}_total", uplink="up0",
                                       queue=q), 0)
            self.assertEqual(v("xdpvhost_uplink_xdp_frames_total", uplink="up0",
                               outcome="redirected"), 0)
        finally:
            self.daemon.call("uplink.remove", name="up0")
        self.assertEqual(scrape_after_change()["xdpvhost_uplink_info"]["samples"], [])

    def test_z_counters_match_the_traffic(self):
        """vm1 (testpmd txonly) -> vm2 (testpmd rxonly): the scrape, stats.get and
        testpmd agree."""
        rx = ctltest.testpmd_guest("vm2-rx", self.socks[1], MAC2, "rxonly", self.dir,
                                   lcores="0,1", main_lcore=0)
        tx = ctltest.testpmd_guest("vm1-tx", self.socks[0], MAC1, "txonly", self.dir,
                                   lcores="0,1", main_lcore=1, peer=MAC2)
        try:
            rx.start()
            rx.wait_forwarding()
            wait_until(lambda: self.daemon.port_state("vm2") == "running", what="vm2 running")
            tx.start()
            tx.wait_forwarding()
            time.sleep(3)
            sent = tx.stop()
            time.sleep(0.5)
            received = rx.stop()
        finally:
            tx.kill()
            rx.kill()
        stats = self.daemon.call("stats.get")
        families = scrape()
        v = lambda name, **l: prom.value(families, name, **l)  # noqa: E731
        s1, s2 = stats["ports"]["vm1"], stats["ports"]["vm2"]
        print(f"\ntestpmd sent {sent['tx']}, received {received['rx']}; "
              f"metrics vm1 rx {v('xdpvhost_port_packets_total', port='vm1', direction='rx')}, "
              f"vm2 tx {v('xdpvhost_port_packets_total', port='vm2', direction='tx')}")
        self.assertGreater(sent["tx"], 1000)
        # What testpmd sent is what the daemon took, in the metrics and in stats.get --
        # but for what a quitting testpmd left on its TX ring (taken_mismatch).
        taken = v("xdpvhost_port_packets_total", port="vm1", direction="rx")
        self.assertEqual(taken_mismatch(sent["tx"], taken), "")
        self.assertEqual(v("xdpvhost_port_packets_total", port="vm1", direction="rx"),
                         s1["rx_packets"])
        # What the daemon delivered is what testpmd received.
        self.assertEqual(v("xdpvhost_port_packets_total", port="vm2", direction="tx"),
                         received["rx"])
        for port, s in (("vm1", s1), ("vm2", s2)):
            for direction in ("rx", "tx"):
                self.assertEqual(v("xdpvhost_port_packets_total", port=port, direction=direction),
                                 s[f"{direction}_packets"])
                self.assertEqual(v("xdpvhost_port_bytes_total", port=port, direction=direction),
                                 s[f"{direction}_bytes"])
            # A reason has a series once it has dropped a frame.
            self.assertEqual(breakdown(families, "xdpvhost_port_drops_total", port, "reason"),
                             {r: n for r, n in s["drops"].items() if n})
            for pair in s["queue_pairs"]:
                for direction in ("rx", "tx"):
                    n = pair[f"{direction}_packets"]
                    got = [val for _, l, val in families["xdpvhost_port_queue_packets_total"]
                           ["samples"] if l["port"] == port and l["direction"] == direction
                           and l["queue"] == str(pair["pair"])]
                    self.assertEqual(got, [n] if n else [], (port, pair, direction))
            for metric, key in PORT_COUNTERS.items():
                self.assertEqual(v(metric, port=port), s[key], metric)
        # Delivered or dropped with a reason, nothing unaccounted.
        drops2 = sum(breakdown(families, "xdpvhost_port_drops_total", "vm2", "reason").values())
        self.assertEqual(v("xdpvhost_port_packets_total", port="vm2", direction="tx") + drops2,
                         taken)
        self.assertEqual(v("xdpvhost_port_bytes_total", port="vm1", direction="rx"),
                         taken * 64)  # testpmd --txpkts=64
        # The thread moved frames in bursts, and counted them.
        t = stats["threads"][0]
        self.assertEqual(v("xdpvhost_thread_iterations_total", thread=0, result="work"),
                         t["busy_iterations"])
        self.assertEqual(v("xdpvhost_thread_burst_frames_count", thread=0),
                         sum(t["burst_histogram"].values()))
        self.assertGreater(v("xdpvhost_thread_burst_frames_count", thread=0), 0)
        self.assertGreaterEqual(v("xdpvhost_thread_burst_frames_sum", thread=0),
                                v("xdpvhost_thread_burst_frames_count", thread=0))
        # stats.reset zeroes stats.get only; Prometheus counters never go backwards.
        self.daemon.call("stats.reset")
        self.assertEqual(self.daemon.call("stats.get", port="vm1")["ports"]["vm1"]["rx_packets"],
                         0)
        self.assertEqual(prom.value(scrape(), "xdpvhost_port_packets_total", port="vm1",
                                    direction="rx"), taken)


class ZeroBreakdowns(unittest.TestCase):
    def test_reload_lists_every_breakdown_and_keeps_the_listener(self):
        """metrics.zero_breakdowns set by a SIGHUP reload: every reason and
        queue pair of an idle port is listed, zero; the listener is not
        re-made (a keep-alive connection from before still gets answers)."""
        d = ctltest.workdir("metrics-zero")
        port = PORT + 3
        daemon = ctltest.checked_daemon(d, {
            "ports": [{"name": "vm1", "socket": os.path.join(d, "vm1.sock"), "mac": MAC1,
                       "queues": 2}],
            "metrics": {"listen": f"127.0.0.1:{port}"},
        }).start()
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

            def scrape_on_conn():
                conn.request("GET", "/metrics")
                r = conn.getresponse()
                self.assertEqual(r.status, 200)
                return prom.parse(r.read().decode())

            before = series_of_port(scrape_on_conn(), "vm1")
            self.assertLessEqual(sum(before.values()), IDLE_PORT_SERIES_BUDGET, before)
            daemon.config["metrics"]["zero_breakdowns"] = True
            with open(daemon.config_path, "w") as f:
                json.dump(daemon.config, f)
            daemon.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: daemon.call("config.get")["metrics"]["zero_breakdowns"],
                       what="the reload")
            def every_breakdown():  # the next render (within EXPOSITION_MAX_AGE_S)
                f = scrape_on_conn()
                return f if breakdown(f, "xdpvhost_port_drops_total", "vm1", "reason") else None

            families = wait_until(every_breakdown, timeout=5 * EXPOSITION_MAX_AGE_S,
                                  what="a render with every breakdown")
            drops = breakdown(families, "xdpvhost_port_drops_total", "vm1", "reason")
            self.assertIn("no_rx_buffer", drops)
            self.assertIn("spoofed_source", drops)
            self.assertEqual(set(drops.values()), {0})
            refused = breakdown(families, "xdpvhost_port_offload_refused_total", "vm1", "reason")
            self.assertIn("gso_bad_size", refused)
            self.assertNotIn("none", refused)
            self.assertEqual(len(breakdown(families, "xdpvhost_port_queue_packets_total", "vm1",
                                           "queue")), 2)
            after = series_of_port(families, "vm1")
            self.assertGreater(sum(after.values()), sum(before.values()) + 30, after)
            conn.close()
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())


class Listener(unittest.TestCase):
    def test_ipv6_listener(self):
        probe = socket.socket(socket.AF_INET6)
        try:
            probe.bind(("::1", 0))
        except OSError:
            self.skipTest("no IPv6 loopback")
        finally:
            probe.close()
        d = ctltest.workdir("metrics-v6")
        daemon = ctltest.checked_daemon(d, {"metrics": {"listen": f"[::1]:{PORT + 1}"}}).start()
        try:
            self.assertEqual(len(listening_tcp_sockets(daemon.pid)), 1)
            status, _, body = http_get("/metrics", port=PORT + 1, host="::1")
            self.assertEqual(status, 200)
            prom.parse(body)
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())

    def test_disabled_and_unusable(self):
        d = ctltest.workdir("metrics-off")
        daemon = ctltest.checked_daemon(d, {"metrics": {"listen": ""}}).start()
        try:
            self.assertEqual(listening_tcp_sockets(daemon.pid), [])
            # A second daemon wanting a port that is taken does not start.
            blocker = socket.socket()
            blocker.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            blocker.bind(("127.0.0.1", PORT + 2))
            blocker.listen(1)
            d2 = ctltest.workdir("metrics-busy")
            other = ctltest.checked_daemon(d2, {"metrics": {"listen": f"127.0.0.1:{PORT + 2}"}})
            with self.assertRaises(RuntimeError) as e:
                other.start()
            blocker.close()
            self.assertIn("metrics listener", str(e.exception))
            self.assertEqual(other.returncode, 1)
            self.assertFalse(os.path.exists(other.control_path))
        finally:
            self.assertEqual(daemon.stop(), 0, daemon.tail())


if __name__ == "__main__":
    unittest.main(verbosity=2)
