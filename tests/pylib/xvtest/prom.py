"""A strict parser of the Prometheus text exposition format 0.0.4, for
checking what xdpvhostd's /metrics serves. Beyond the format's grammar it
insists on: every sample under a preceding # TYPE of its family, each family
in one contiguous block with one HELP and one TYPE, no duplicate series, no
empty lines, counters non-negative, histograms with ordered cumulative
buckets ending in +Inf equal to _count, and a trailing newline."""

import math
import re

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class ParseError(Exception):
    pass


def parse_value(text):
    if text in ("+Inf", "Inf"):
        return math.inf
    if text == "-Inf":
        return -math.inf
    if text == "NaN":
        return math.nan
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        raise ParseError(f"bad value {text!r}")
    return float(text)


def parse_labels(text, pos, lineno):
    """Parses {a="b",...} starting at text[pos] == '{'; returns (dict, end)."""
    labels = {}
    pos += 1
    while True:
        if pos < len(text) and text[pos] == "}":
            return labels, pos + 1
        m = LABEL_NAME.match(text, pos)
        if not m:
            raise ParseError(f"line {lineno}: bad label name at {text[pos:pos + 20]!r}")
        name = m.group(0)
        if name.startswith("__"):
            raise ParseError(f"line {lineno}: reserved label name {name}")
        pos = m.end()
        if text[pos:pos + 2] != '="':
            raise ParseError(f"line {lineno}: expected =\" after {name}")
        pos += 2
        value = []
        while True:
            if pos >= len(text):
                raise ParseError(f"line {lineno}: unterminated label value")
            c = text[pos]
            if c == "\\":
                nxt = text[pos + 1:pos + 2]
                if nxt == "\\":
                    value.append("\\")
                elif nxt == '"':
                    value.append('"')
                elif nxt == "n":
                    value.append("\n")
                else:
                    raise ParseError(f"line {lineno}: bad escape \\{nxt}")
                pos += 2
            elif c == '"':
                pos += 1
                break
            elif c == "\n":
                raise ParseError(f"line {lineno}: raw newline in label value")
            else:
                value.append(c)
                pos += 1
        if name in labels:
            raise ParseError(f"line {lineno}: label {name} twice")
        labels[name] = "".join(value)
        if pos < len(text) and text[pos] == ",":
            pos += 1
            continue
        if pos < len(text) and text[pos] == "}":
            return labels, pos + 1
        raise ParseError(f"line {lineno}: expected , or }} after label {name}")


def family_of(sample_name, families):
    if sample_name in families:
        return sample_name
    for suffix in ("_bucket", "_sum", "_count"):
        if sample_name.endswith(suffix):
            base = sample_name[: -len(suffix)]
            if base in families and families[base]["type"] in ("histogram", "summary"):
                return base
    return None


def parse(text):
    """Returns {family: {"type", "help", "samples": [(name, labels, value)]}}."""
    if not text.endswith("\n"):
        raise ParseError("the exposition does not end with a newline")
    families = {}
    current = None
    finished = set()
    seen_series = set()
    for lineno, line in enumerate(text[:-1].split("\n"), 1):
        if line == "":
            raise ParseError(f"line {lineno}: empty line")
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                kind, name = parts[1], parts[2]
                rest = parts[3] if len(parts) > 3 else ""
                if not METRIC_NAME.fullmatch(name):
                    raise ParseError(f"line {lineno}: bad metric name {name!r}")
                if name != current:
                    if name in finished or name in families:
                        raise ParseError(f"line {lineno}: family {name} is not contiguous")
                    if current is not None:
                        finished.add(current)
                    current = name
                    families[name] = {"type": None, "help": None, "samples": []}
                fam = families[name]
                if fam["samples"]:
                    raise ParseError(f"line {lineno}: {kind} of {name} after its samples")
                if kind == "HELP":
                    if fam["help"] is not None:
                        raise ParseError(f"line {lineno}: second HELP for {name}")
                    if re.search(r"\\[^\\n]", rest.replace("\\\\", "")):
                        raise ParseError(f"line {lineno}: bad escape in HELP")
                    fam["help"] = rest.replace("\\n", "\n").replace("\\\\", "\\")
                else:
                    if fam["type"] is not None:
                        raise ParseError(f"line {lineno}: second TYPE for {name}")
                    if rest not in TYPES:
                        raise ParseError(f"line {lineno}: unknown type {rest!r}")
                    fam["type"] = rest
            continue
        m = METRIC_NAME.match(line)
        if not m:
            raise ParseError(f"line {lineno}: bad sample {line!r}")
        name = m.group(0)
        pos = m.end()
        labels = {}
        if pos < len(line) and line[pos] == "{":
            labels, pos = parse_labels(line, pos, lineno)
        if pos >= len(line) or line[pos] != " ":
            raise ParseError(f"line {lineno}: expected a space before the value")
        fields = line[pos + 1:].split(" ")
        if len(fields) not in (1, 2) or "" in fields:
            raise ParseError(f"line {lineno}: expected value [timestamp]")
        value = parse_value(fields[0])
        if len(fields) == 2 and not re.fullmatch(r"-?\d+", fields[1]):
            raise ParseError(f"line {lineno}: bad timestamp {fields[1]!r}")
        fam_name = family_of(name, families)
        if fam_name is None or families[fam_name]["type"] is None:
            raise ParseError(f"line {lineno}: sample {name} without a TYPE line")
        if fam_name != current:
            raise ParseError(f"line {lineno}: sample {name} outside its family's block")
        series = (name, tuple(sorted(labels.items())))
        if series in seen_series:
            raise ParseError(f"line {lineno}: duplicate series {name}{labels}")
        seen_series.add(series)
        fam = families[fam_name]
        if fam["type"] == "counter" and not value >= 0:
            raise ParseError(f"line {lineno}: counter {name} is {value}")
        if fam["type"] in ("counter", "gauge", "untyped") and name != fam_name:
            raise ParseError(f"line {lineno}: {name} in {fam['type']} family {fam_name}")
        if name.endswith("_bucket") and fam["type"] == "histogram" and "le" not in labels:
            raise ParseError(f"line {lineno}: bucket without le")
        fam["samples"].append((name, labels, value))
    for name, fam in families.items():
        if fam["type"] is None:
            raise ParseError(f"family {name} has no TYPE")
        if fam["type"] == "histogram":
            check_histogram(name, fam["samples"])
    return families


def check_histogram(name, samples):
    groups = {}
    for sample, labels, value in samples:
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if sample == name + "_bucket":
            g["buckets"].append((parse_value(labels["le"]), value))
        elif sample == name + "_sum":
            g["sum"] = value
        elif sample == name + "_count":
            g["count"] = value
        else:
            raise ParseError(f"histogram {name}: unexpected sample {sample}")
    for key, g in groups.items():
        bounds = [b for b, _ in g["buckets"]]
        if not bounds or bounds[-1] != math.inf:
            raise ParseError(f"histogram {name}{key}: no +Inf bucket last")
        if bounds != sorted(bounds) or len(set(bounds)) != len(bounds):
            raise ParseError(f"histogram {name}{key}: buckets not in increasing le order")
        counts = [c for _, c in g["buckets"]]
        if counts != sorted(counts):
            raise ParseError(f"histogram {name}{key}: buckets not cumulative")
        if g["count"] is None or g["sum"] is None:
            raise ParseError(f"histogram {name}{key}: _sum or _count missing")
        if g["count"] != counts[-1]:
            raise ParseError(f"histogram {name}{key}: _count {g['count']} != +Inf {counts[-1]}")


def value(families, name, **labels):
    """The value of the one sample of `name` whose labels include `labels`."""
    fam_name = family_of(name, families)
    matches = [v for n, l, v in families[fam_name]["samples"]
               if n == name and all(l.get(k) == str(val) for k, val in labels.items())]
    if len(matches) != 1:
        raise KeyError(f"{len(matches)} samples of {name} match {labels}")
    return matches[0]


def self_test():
    good = ('# HELP a_total A \\\\ help\\n.\n# TYPE a_total counter\na_total{x="1",y="q\\"\\\\\\n"} 3\n'
            '# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 2\nh_sum 3\nh_count 2\n')
    f = parse(good)
    assert f["a_total"]["samples"][0][1] == {"x": "1", "y": 'q"\\\n'}
    assert f["a_total"]["help"] == "A \\ help\n."
    bad = [
        "a 1",                                               # no newline at the end
        "a 1\n",                                             # no TYPE
        "# TYPE a counter\na -1\n",                          # negative counter
        "# TYPE a gauge\na 1\na 2\n",                        # duplicate series
        "# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n",           # label twice
        "# TYPE a gauge\na{x=\"\\t\"} 1\n",                 # bad escape
        "# TYPE a gauge\n# TYPE b gauge\nb 1\na 1\n",        # a's sample outside its block
        "# TYPE a gauge\na 1\n\n",                           # empty line
        "# TYPE a gauge\na one\n",                           # bad value
        "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
        "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 2\n",
        "# TYPE a gauge\n# TYPE a gauge\na 1\n",
        "# TYPE a gauge\na_total 1\n",
        "# TYPE a gauge\na{__x=\"1\"} 1\n",
        "# TYPE a gauge\na{x=\"1\" } 1\n",
    ]
    for text in bad:
        try:
            parse(text)
        except ParseError:
            continue
        raise AssertionError(f"accepted {text!r}")


if __name__ == "__main__":
    self_test()
    print("xvtest.prom self test passed")
