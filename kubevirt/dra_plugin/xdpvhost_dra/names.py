"""Names that come from the kubelet or the API server, checked before any of
them becomes part of a path, a file name, a CDI device name or a daemon
port; and the names the plugin makes itself (port, directory, device).

Every check raises InvalidName with a message that names the field, the
value and the rule. The binding sidecar checks the VMI's names with this
module too (its image carries it: deploy/Dockerfile), so it imports nothing
but the standard library."""

import hashlib
import re

# RFC 1123 label (namespaces, request names, device names).
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# RFC 1123 subdomain (object names: claims, pods, nodes), at most 253.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Kubernetes UIDs are UUIDs; accept their character set, nothing that could
# form a path (no '/', '.', '_').
UID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9-]{0,63}"
_UID = re.compile(rf"^{UID_PATTERN}$")
# A KubeVirt interface or network name: KubeVirt admits letters, digits, '-'
# and '_' ("Network interface name can only contain alphabetical characters,
# numbers, dashes (-) or underscores (_)").
_INTERFACE = re.compile(r"^[A-Za-z0-9_-]+$")
# The daemon's port and uplink names (proto/config.schema.json $defs/name).
_DAEMON_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")

PORT_PREFIX = "dra-"
KEY_HEX = 12  # hex digits of the per-claim-request key: 48 bits


class InvalidName(ValueError):
    pass


def _text(what, value):
    if not isinstance(value, str):
        raise InvalidName(f"{what} must be a string, got {type(value).__name__}")
    if value == "":
        raise InvalidName(f"{what} is empty")
    return value


def _matching(what, value, pattern, kind, max_length=None):
    _text(what, value)
    if (max_length is not None and len(value) > max_length) or not pattern.match(value):
        raise InvalidName(f"{what} {value[:80]!r} is not {kind}")
    return value


def dns_label(what, value):
    return _matching(what, value, _DNS_LABEL,
                     "a DNS label (lower-case letters, digits and '-', at most 63)")


def dns_subdomain(what, value):
    return _matching(what, value, _DNS_SUBDOMAIN,
                     "a DNS subdomain (lower-case letters, digits, '-' and '.', at most 253)",
                     max_length=253)


def uid(what, value):
    return _matching(what, value, _UID, "a UID (letters, digits and '-', at most 64)")


def request_name(what, value):
    """A claim request, or <request>/<subrequest> (firstAvailable); returns
    the top-level request."""
    _text(what, value)
    parts = value.split("/")
    if len(parts) > 2:
        raise InvalidName(f"{what} {value[:80]!r} has more than one '/'")
    for part in parts:
        dns_label(what, part)
    return parts[0]


def interface_name(what, value):
    return _matching(what, value, _INTERFACE,
                     "a KubeVirt interface name (letters, digits, '-' and '_')", max_length=253)


def daemon_name(what, value):
    return _matching(what, value, _DAEMON_NAME, "a daemon port/uplink name")


def claim_key(claim_uid, request):
    """Short, stable key of one request of one claim: names its port and its
    socket directory (so <socket-root>/<key>/vhost.sock stays short)."""
    return hashlib.sha256(f"{claim_uid}/{request}".encode()).hexdigest()[:KEY_HEX]


def port_name(key):
    return PORT_PREFIX + key


def device_name(uplink):
    """The ResourceSlice device of an uplink: the uplink's name when it is a
    DNS label, else a lower-cased, '-'-joined form with a hash of the real
    name (so that two uplinks never map to one device)."""
    if _DNS_LABEL.match(uplink):
        return uplink
    base = re.sub(r"[^a-z0-9-]+", "-", uplink.lower()).strip("-")[:48] or "uplink"
    return f"{base}-{hashlib.sha256(uplink.encode()).hexdigest()[:8]}"


def slot_device_name(uplink, slot):
    """The ResourceSlice device of port slot `slot` of an uplink (device
    mode "slots"): the uplink's device and "-s<slot>". A daemon name has at
    most 32 characters, its device at most 41, so this stays a DNS label."""
    return f"{device_name(uplink)}-s{slot}"
