"""Frame accounting and resource slopes for the soak.

Frame accounting: with only unicast on the wire and between guests (the soak
makes sure of that), every frame the daemon takes (from a guest's transmit
queue or an uplink's receive ring) is either refused where it came in
(malformed, bad_offload, spoofed_source, flood_limited: a drop, and not in
rx_packets) or counted in rx_packets and then delivered once (tx_packets of
a guest or an uplink) or dropped once, by reason, on the port where it
happened (lib/dataplane/drop_reason.hpp), or on the service thread when its
port was removed with the frame in flight. A frame the interface refused
after the socket took it (uplink_refused) is counted both as sent and as
dropped. So, over one daemon lifetime:

    rx_packets = tx_packets + (drops - drops where it came in) - uplink_refused

`oversize` is counted both where a frame came in and where it was to go out;
the soak sends no frame near any MTU, so it must stay 0 for the sum to close.

Slopes: the least-squares line through (hours, value) of the checkpoints
after the warm-up."""


# Drop reasons counted where a frame came in, before rx_packets.
INGRESS = ("malformed", "bad_offload", "spoofed_source", "flood_limited")


def frame_accounting(stats):
    """{"rx", "tx", "drops", "ingress", "refused", "oversize", "floods",
    "unaccounted", "drops_by_reason"} of a stats.get result; unaccounted is
    rx - (tx + drops - ingress - refused)."""
    ports, uplinks = stats["ports"].values(), stats["uplinks"].values()
    by_reason = {}
    for c in [*ports, *uplinks]:
        for reason, n in c.get("drops", {}).items():
            by_reason[reason] = by_reason.get(reason, 0) + n
    port_gone = sum(t.get("dropped_port_gone", 0) for t in stats["threads"])
    if port_gone:
        by_reason["port_gone (thread)"] = port_gone
    rx = sum(p["rx_packets"] for p in ports) + sum(u["rx_packets"] for u in uplinks)
    tx = sum(p["tx_packets"] for p in ports) + sum(u["tx_packets"] for u in uplinks)
    drops = sum(by_reason.values())
    ingress = sum(by_reason.get(r, 0) for r in INGRESS)
    refused = by_reason.get("uplink_refused", 0)
    return {"rx": rx, "tx": tx, "drops": drops, "ingress": ingress, "refused": refused,
            "oversize": by_reason.get("oversize", 0),
            "floods": sum(u.get("flood_rx", 0) for u in uplinks),
            "unaccounted": rx - (tx + drops - ingress - refused),
            "drops_by_reason": dict(sorted(by_reason.items()))}


def taken_from(port_stats):
    """Frames the daemon took from a guest port's transmit queues: rx_packets
    and what it refused as they came in."""
    return port_stats["rx_packets"] + sum(port_stats["drops"].get(r, 0) for r in INGRESS)


def slope_per_hour(points):
    """The least-squares slope of [(seconds, value), ...] per hour; 0 for fewer than 2."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    if sxx == 0:
        return 0.0
    return sum((t - mx) * (v - my) for t, v in points) / sxx * 3600.0


def flatten(sample, prefix=""):
    """{"a.b.c": number} of the numbers in a nested dict (lists skipped)."""
    out = {}
    for key, value in sample.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, name + "."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out[name] = value
    return out
