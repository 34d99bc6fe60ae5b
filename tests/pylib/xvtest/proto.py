"""proto/ loaded with python3-jsonschema: validators for every method's
params and result, the examples of every method, the error codes (Debian
12's jsonschema 4.10 RefResolver, or newer releases' referencing.Registry)."""

import json
import pathlib

import jsonschema
from jsonschema import Draft202012Validator

from . import paths

ID_BASE = "https://xdpvhost.invalid/proto/"


class Proto:
    def __init__(self, proto_dir=None):
        """proto_dir: default $XDPVHOST_PROTO, else the tree's proto/."""
        self.dir = pathlib.Path(proto_dir or paths.proto_dir())
        files = [self.dir / "config.schema.json", self.dir / "types.schema.json",
                 self.dir / "rpc.schema.json"] + sorted((self.dir / "methods").glob("*.json"))
        self.by_id = {}
        self.methods = {}
        for path in files:
            doc = json.loads(path.read_text())
            self.by_id[doc["$id"]] = doc
            if path.parent.name == "methods":
                self.methods[path.stem] = doc
        self.errors = json.loads((self.dir / "errors.json").read_text())["errors"]
        try:
            from referencing import Registry, Resource
            from referencing.jsonschema import DRAFT202012
            registry = Registry().with_resources(
                (uri, Resource.from_contents(doc, default_specification=DRAFT202012))
                for uri, doc in self.by_id.items())
            self._validator = lambda schema: Draft202012Validator(schema, registry=registry)
        except ImportError:
            def make(schema):
                resolver = jsonschema.RefResolver(base_uri=schema.get("$id", ""), referrer=schema,
                                                  store=dict(self.by_id))
                return Draft202012Validator(schema, resolver=resolver)
            self._validator = make

    def _errors(self, method, part, instance):
        doc = self.methods[method]
        schema = {"$ref": doc["$id"] + "#/$defs/" + part}
        return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                for e in self._validator(schema).iter_errors(instance)]

    def result_errors(self, method, result):
        return self._errors(method, "result", result)

    def params_errors(self, method, params):
        return self._errors(method, "params", params)

    def examples(self, method):
        return self.methods[method].get("examples", [])

    def error_codes(self):
        return {e["name"]: e["code"] for e in self.errors}
