"""What the plugin has prepared, kept on the host so that it survives a
restart of the plugin (and lets it put back what a restarted daemon lost):
one JSON file per claim, <state-dir>/<claim UID>.json, written atomically.

A record's phase is "preparing" from before the first change on the node
until everything is in place, then "prepared"; unprepare deletes it last."""

import json
import logging
import os

from . import atomic_file, names

VERSION = 1

log = logging.getLogger("xdpvhost-dra.state")


class StateStore:
    def __init__(self, directory):
        self.directory = os.path.abspath(directory)
        os.makedirs(self.directory, mode=0o700, exist_ok=True)

    def _path(self, claim_uid):
        names.uid("claim UID", claim_uid)
        return os.path.join(self.directory, f"{claim_uid}.json")

    def load(self, claim_uid):
        path = self._path(claim_uid)
        try:
            with open(path) as f:
                record = json.load(f)
        except FileNotFoundError:
            return None
        except ValueError as e:
            raise RuntimeError(f"state file {path} is unreadable: {e}") from e
        if not isinstance(record, dict) or record.get("version") != VERSION:
            raise RuntimeError(f"state file {path}: not a version {VERSION} record")
        return record

    def save(self, record):
        record["version"] = VERSION
        atomic_file.write_json(self._path(record["claim"]["uid"]), record, mode=0o600)

    def delete(self, claim_uid):
        return atomic_file.remove(self._path(claim_uid))

    def all(self):
        """Every readable record (unreadable ones are logged and skipped)."""
        records = []
        for entry in sorted(os.listdir(self.directory)):
            if not entry.endswith(".json") or entry.startswith("."):
                continue
            claim_uid = entry[:-len(".json")]
            try:
                record = self.load(claim_uid)
            except (RuntimeError, names.InvalidName) as e:
                log.error("%s", e)
                continue
            if record is not None:
                records.append(record)
        return records
