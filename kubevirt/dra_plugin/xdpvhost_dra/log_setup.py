"""How the DRA plugin and the binding sidecar log: text (the default) or,
with --log-format json, JSON lines: one event per line with its time (UTC,
milliseconds), level, logger and message, the claim's namespace, name and
VM where the event concerns one (log_setup.context), and a traceback as
"exception". Under systemd (stderr is the journal's stream, JOURNAL_STREAM)
every line starts with its syslog priority (<3> error, <4> warning, <6>
info, <7> debug), which journald takes as the entry's. Standard library
only: the sidecar's image carries this module."""

import contextlib
import contextvars
import datetime
import json
import logging
import os
import sys

FORMATS = ("text", "json")
_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_PRIORITY = {logging.DEBUG: 7, logging.INFO: 6, logging.WARNING: 4, logging.ERROR: 3,
             logging.CRITICAL: 2}

_context = contextvars.ContextVar("xdpvhost_log_context", default={})


@contextlib.contextmanager
def context(**fields):
    """Events logged inside carry these fields (empty ones left out)."""
    token = _context.set({**_context.get(), **{k: v for k, v in fields.items() if v}})
    try:
        yield
    finally:
        _context.reset(token)


def add_context(**fields):
    """More fields for the rest of the enclosing context()."""
    _context.set({**_context.get(), **{k: v for k, v in fields.items() if v}})


class JsonFormatter(logging.Formatter):
    def format(self, record):
        stamp = datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        event = {"time": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
                 "level": record.levelname.lower(), "logger": record.name,
                 "message": record.getMessage()}
        for key, value in _context.get().items():
            event.setdefault(key, value)
        if record.exc_info:
            event["exception"] = self.formatException(record.exc_info)
        return json.dumps(event, ensure_ascii=False)


class _JournalPriority(logging.Formatter):
    """Another formatter's lines, each with the record's syslog priority."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def format(self, record):
        prefix = f"<{_PRIORITY.get(record.levelno, 6)}>"
        return "\n".join(prefix + line for line in self.inner.format(record).split("\n"))


def under_journal(stream):
    """Whether `stream` is the journal's (systemd.exec(5): JOURNAL_STREAM is
    its "device:inode")."""
    dev, _, ino = os.environ.get("JOURNAL_STREAM", "").partition(":")
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return dev.isdigit() and ino.isdigit() and (st.st_dev, st.st_ino) == (int(dev), int(ino))


def setup(level, fmt="text", stream=None):
    stream = stream or sys.stderr
    formatter = JsonFormatter() if fmt == "json" else logging.Formatter(_TEXT)
    if under_journal(stream):
        formatter = _JournalPriority(formatter)
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
