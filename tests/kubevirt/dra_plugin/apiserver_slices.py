"""What the API server does to a ResourceSlice (resource.k8s.io/v1) it
stores, for the stand-in (apiserver_standin.py): the part of it that a
publisher comparing what it sent with what it reads back runs into.

- Quantities come back in canonical form (k8s.io/apimachinery
  pkg/api/resource/quantity.go): "1000" is stored as "1k", "0.5" as
  "500m", "1024Mi" as "1Gi"; a canonical string is kept as it is.
- Fields of a disabled feature gate are dropped on create and update,
  unless the stored object already uses them (the registry strategy's
  ratchet: pkg/registry/resource/resourceslice/strategy.go,
  dropDisabledFields): DRAConsumableCapacity takes allowMultipleAllocations
  and capacity[*].requestPolicy, DRADeviceTaints takes taints. Both gates
  are alpha and off by default in Kubernetes 1.34 and 1.35, beta and on
  from 1.36 (pkg/features/kube_features.go).
- A taint without timeAdded gets the time of the write
  (pkg/apis/resource/v1/defaults.go, SetDefaults_DeviceTaint).
- metadata.generation is 1 on create and grows when the spec changes.

Written from those sources, apart from the publisher's own code: a
publisher that normalised wrongly would not be matched by the same mistake
here."""

import datetime
import re
from decimal import Decimal

# Kubernetes 1.36 defaults; KUBE_1_35_GATES for 1.34 and 1.35.
DEFAULT_GATES = {"DRAConsumableCapacity": True, "DRADeviceTaints": True}
KUBE_1_35_GATES = {"DRAConsumableCapacity": False, "DRADeviceTaints": False}

_QUANTITY = re.compile(r"^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?\d+))?$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {e: s for s, e in _DECIMAL.items()}


def canonical_quantity(text):
    """The string the API server stores for a Quantity sent as `text`
    (ValueError if it is none)."""
    m = _QUANTITY.match(text.strip())
    if not m:
        raise ValueError(f"quantities must match the regular expression: {text!r}")
    sign, digits, binary, decimal, exponent = m.groups()
    value = Decimal(digits)
    if sign == "-":
        value = -value
    if binary:
        value *= Decimal(1024) ** _BINARY[binary]
        if value == value.to_integral_value():
            n = 0
            while n < 6 and value != 0 and value % (Decimal(1024) ** (n + 1)) == 0:
                n += 1
            suffix = next(s for s, p in _BINARY.items() if p == n) if n else ""
            return f"{int(value / Decimal(1024) ** n)}{suffix}"
        # Not a whole number of bytes: decimal SI, as the server falls back to.
    elif exponent is not None:
        value *= Decimal(10) ** int(exponent)
        e = _largest_exponent(value)
        mantissa = int(value / Decimal(10) ** e)
        return f"{mantissa}e{e}" if e else str(mantissa)
    else:
        value *= Decimal(10) ** _DECIMAL[decimal or ""]
    e = _largest_exponent(value)
    return f"{int(value / Decimal(10) ** e)}{_DECIMAL_SUFFIX[e]}"


def _largest_exponent(value):
    """The largest of -9, -6, ..., 18 at which `value` is a whole mantissa
    (values below a nano are rounded up to one, as the server does)."""
    if value == 0:
        return 0
    for e in range(18, -10, -3):
        scaled = value / Decimal(10) ** e
        if scaled == scaled.to_integral_value():
            return e
    return -9


def _canonical_capacity(capacity):
    for entry in (capacity or {}).values():
        if "value" in entry:
            entry["value"] = canonical_quantity(entry["value"])
        policy = entry.get("requestPolicy") or {}
        if policy.get("default") is not None:
            policy["default"] = canonical_quantity(policy["default"])
        if "validValues" in policy:
            policy["validValues"] = [canonical_quantity(v) for v in policy["validValues"]]
        for k, v in (policy.get("validRange") or {}).items():
            policy["validRange"][k] = canonical_quantity(v)


def _uses(spec, test):
    return any(test(d) for d in (spec or {}).get("devices") or [])


def stored_slice(new, old, gates, now=None):
    """`new` (a ResourceSlice sent by POST or PUT; changed in place) as the
    server stores it, given the stored `old` (None on create)."""
    spec = new.get("spec") or {}
    old_spec = (old or {}).get("spec")
    consumable = gates.get("DRAConsumableCapacity", False) or _uses(
        old_spec, lambda d: "allowMultipleAllocations" in d
        or any("requestPolicy" in c for c in (d.get("capacity") or {}).values()))
    taints = gates.get("DRADeviceTaints", False) or _uses(old_spec, lambda d: d.get("taints"))
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    for d in spec.get("devices") or []:
        if not consumable:
            d.pop("allowMultipleAllocations", None)
            for c in (d.get("capacity") or {}).values():
                c.pop("requestPolicy", None)
        if not taints:
            d.pop("taints", None)
        for t in d.get("taints") or []:
            t.setdefault("timeAdded", stamp)
        _canonical_capacity(d.get("capacity"))
    meta = new.setdefault("metadata", {})
    if old is None:
        meta["generation"] = 1
    else:
        generation = old["metadata"].get("generation", 1)
        meta["generation"] = generation + 1 if spec != old_spec else generation
    return new
