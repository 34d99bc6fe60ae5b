"""Guests whose virtio-net device differs from QEMU's defaults. Each must
work (ping with 1400-byte frames, short iperf3 TCP both ways against a guest
with default options) or be refused cleanly at negotiation (the daemon keeps
running, says why in its log, and the other port is unaffected).

mrg-rxbuf-off      -device virtio-net-pci,...,mrg_rxbuf=off
event-idx-off      ...,event_idx=off
indirect-desc-off  ...,indirect_desc=off
mq                 2 queue pairs: port "queues":2, QEMU queues=2 + mq=on,
                   -smp 2, ethtool -L combined 2 in the guest; pings pinned to
                   each vCPU so both TX queues carry frames; iperf3 -P 2
                   both ways; per-queue guest counters (ethtool -S) reported.
"""

from __future__ import annotations

import re

from e2e_context import Context, mac, two_ports
from guest_checks import (check_alive, check_clean_stop, check_control_features,
                          check_features, check_iperf, check_ping, check_port_states, wait_done,
                          wait_result)
from scenario_result import ScenarioResult
from xvtest.guest import GuestError

NET = "10.77.0"

QSTATS_CMD = (
    r"""ethtool -S $XV_IF | awk -F: '/_queue_[0-9]+_packets/ {gsub(/ /,"",$1); """
    r"""gsub(/ /,"",$2); printf ",\"%s\":%s", $1, $2}' > /tmp/qstats; """
    r'xv result "\"kind\":\"qstats\"$(cat /tmp/qstats)"'
)


def _refusal_lines(d, port_name: str) -> list[str]:
    return [l for l in d.problems()
            if re.search(rf"port {re.escape(port_name)}\b", l) and re.search(r"(?i)feature", l)]


def _judge_refusal(r: ScenarioResult, d, x, port_name: str, what: str):
    """The guest's traffic failed: a clean refusal at negotiation is acceptable,
    anything else is a failure."""
    lines = _refusal_lines(d, port_name)
    if lines and d.alive():
        r.note(f"{what} refused at negotiation: {lines[0]}")
        r.check(f"{what}: refused cleanly (daemon alive, reason logged)", True, lines[0])
    else:
        r.check(f"{what}: works or is refused cleanly", False,
                "traffic failed and the daemon logged no refusal naming a feature\n"
                f"--- daemon log ---\n{d.tail(15, this_run=True)}\n--- {x.name} console ---\n{x.tail(15)}")


def _iperf_server(ctx: Context, wd: str, sock: str):
    """vm2, default device options: serves two iperf3 tests."""
    return ctx.guest(wd, sock, "vm2", mac=mac(2), ip=f"{NET}.2/24", peer=f"{NET}.1", reconnect=1,
                     run=["iperf3-server,180", "iperf3-server,180"])


def _run_device_option(ctx: Context, r: ScenarioResult, option: str, feature: str):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "server")
    d = ctx.daemon(wd, ports)
    d.start()
    secs = ctx.short_iperf_secs
    x = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2", reconnect=1,
                  device_opts={option: "off"},
                  run=["wait-peer,_,90", "ping,_,5,0.2,1400", f"iperf3-client,_,{secs}",
                       f"iperf3-client,_,{secs},-R"])
    y = _iperf_server(ctx, wd, s2)
    x.start()
    y.start()
    try:
        wait_result(x, "nic", d, 120)
        check_features(r, x, f"vm1 ({option}=off)", absent=(feature,))
        wait_result(x, "ping", d, 120)
        check_control_features(r, d, "vm1", x, "vm1")
    except GuestError as e:
        r.note(f"vm1 did not reach its ping step: {str(e).splitlines()[0]}")
    rc_x = wait_done(r, x, 180, d)
    rc_y = wait_done(r, y, 30 if rc_x == 0 else 5, d)
    r.figure("boot_s", f"{x.boot_time()}/{y.boot_time()}")
    if rc_x != 0:
        _judge_refusal(r, d, x, "vm1", f"{option}=off")
    else:
        check_ping(r, (x.results("ping") or [None])[-1], "vm1 -> vm2, 1400 bytes", "rtt_ms")
        tests = x.results("iperf3") + [None, None]
        check_iperf(r, tests[0], "TCP vm1 -> vm2", "tcp_mbps", "retrans")
        check_iperf(r, tests[1], "TCP vm2 -> vm1 (-R)", "tcp_rev_mbps", "retrans_rev")
        r.check("vm2 (default options) served both tests", rc_y == 0, f"rc {rc_y}")
    check_alive(r, d)
    check_clean_stop(r, d)


def run_mrg_rxbuf_off(ctx: Context, r: ScenarioResult):
    _run_device_option(ctx, r, "mrg_rxbuf", "MRG_RXBUF")


def run_event_idx_off(ctx: Context, r: ScenarioResult):
    _run_device_option(ctx, r, "event_idx", "RING_EVENT_IDX")


def run_indirect_desc_off(ctx: Context, r: ScenarioResult):
    _run_device_option(ctx, r, "indirect_desc", "RING_INDIRECT_DESC")


def run_mq(ctx: Context, r: ScenarioResult):
    wd = ctx.scenario_dir(r.name)
    s1, s2, ports = two_ports(wd, "server", queues=2)
    d = ctx.daemon(wd, ports)
    d.start()
    secs = ctx.short_iperf_secs
    cmd = (f"xv wait-peer _ 90 && taskset -c 0 xv ping _ 5 0.2 && taskset -c 1 xv ping _ 5 0.2"
           f" && xv iperf3-client _ {secs} -P 2 && xv iperf3-client _ {secs} -P 2 -R;"
           f" rc=$?; {QSTATS_CMD}; exit $rc")
    x = ctx.guest(wd, s1, "vm1", mac=mac(1), ip=f"{NET}.1/24", peer=f"{NET}.2", reconnect=1,
                  netdev_queues=2, smp=2, queues=2, cmd=cmd)
    y = _iperf_server(ctx, wd, s2)
    x.start()
    y.start()
    try:
        wait_result(x, "ping", d, 150)
        try:
            detail = d.call("port.get", name="vm1")
            qs = detail.get("queues", [])
            enabled = [q["index"] for q in qs if q.get("state") == "enabled"]
            r.check("daemon: all 4 virtqueues of vm1 enabled", sorted(enabled) == [0, 1, 2, 3],
                    f"queues {[(q['index'], q['state']) for q in qs]}")
        except Exception as e:  # noqa: BLE001 - control socket absent or old
            r.skip("daemon: all 4 virtqueues of vm1 enabled", f"control socket: {e}")
    except GuestError as e:
        r.note(f"vm1 did not reach its ping step: {str(e).splitlines()[0]}")
    rc_x = wait_done(r, x, 180, d)
    rc_y = wait_done(r, y, 30 if rc_x == 0 else 5, d)
    r.figure("boot_s", f"{x.boot_time()}/{y.boot_time()}")
    nic = x.results("nic")
    if rc_x != 0 and "MQ" not in (nic[-1]["feature_names"] if nic else []):
        _judge_refusal(r, d, x, "vm1", "mq=on with 2 queue pairs")
    else:
        check_features(r, x, "vm1", present=("MQ",))
        r.check("vm1 has 2 RX queues", bool(nic) and nic[-1].get("rx_queues") == 2,
                f"rx_queues {nic[-1].get('rx_queues') if nic else None}")
        pings = x.results("ping") + [None, None]
        check_ping(r, pings[0], "vm1 on vCPU 0 (TX queue 0)", "rtt_ms")
        check_ping(r, pings[1], "vm1 on vCPU 1 (TX queue 1)")
        tests = x.results("iperf3") + [None, None]
        check_iperf(r, tests[0], "TCP vm1 -> vm2, 2 streams", "tcp_mbps", "retrans")
        check_iperf(r, tests[1], "TCP vm2 -> vm1, 2 streams (-R)", "tcp_rev_mbps", "retrans_rev")
        q = (x.results("qstats") or [{}])[-1]
        tx = [q.get(f"tx_queue_{i}_packets") for i in (0, 1)]
        rx = [q.get(f"rx_queue_{i}_packets") for i in (0, 1)]
        r.figure("guest_tx_per_queue", "/".join(map(str, tx)))
        r.figure("guest_rx_per_queue", "/".join(map(str, rx)))
        r.check("both guest TX queues carried frames (and were answered)",
                all(isinstance(v, int) and v > 0 for v in tx), f"tx packets per queue {tx}")
        if not all(isinstance(v, int) and v > 0 for v in rx):
            r.note(f"the daemon delivered to one RX queue only: rx packets per queue {rx}")
        r.check("vm2 served the test", rc_y == 0, f"rc {rc_y}")
    check_port_states(r, d, ["vm1", "vm2"], "waiting", "after the guests powered off")
    check_alive(r, d)
    check_clean_stop(r, d)
