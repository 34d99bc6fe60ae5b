#!/usr/bin/env python3
"""Cross-checks proto/ with the reference JSON Schema implementation (python3-jsonschema).

- every schema under proto/ is a valid draft 2020-12 schema;
- every example in proto/methods/*.json validates against its method document;
- every proto/examples/config-*.json and the config schema's own examples validate
  against proto/config.schema.json;
- proto/errors.json validates against rpc.schema.json#/$defs/error_table;
- every case in schema_cases.json is judged valid or invalid exactly as the case
  says (the C++ validator's unit test reads the same file), so both
  implementations agree on the same instances.

Usage: check_proto_schemas.py PROTO_DIR CASES_JSON
Works with Debian 12's jsonschema 4.10 (RefResolver) and newer releases
(referencing.Registry).
"""
import json
import pathlib
import sys

import jsonschema
from jsonschema import Draft202012Validator

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main():
    proto = pathlib.Path(sys.argv[1])
    cases_file = pathlib.Path(sys.argv[2])
    schema_files = sorted([proto / "config.schema.json", proto / "types.schema.json", proto / "rpc.schema.json"]
                          + list((proto / "methods").glob("*.json")))
    docs = {}
    for path in schema_files:
        doc = load(path)
        try:
            Draft202012Validator.check_schema(doc)
        except jsonschema.exceptions.SchemaError as e:
            fail(f"{path}: not a valid draft 2020-12 schema: {e.message}")
            continue
        if "$id" not in doc:
            fail(f"{path}: has no $id")
            continue
        docs[path] = doc
    by_id = {doc["$id"]: doc for doc in docs.values()}

    try:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012
        registry = Registry().with_resources(
            (uri, Resource.from_contents(doc, default_specification=DRAFT202012)) for uri, doc in by_id.items())

        def validator(schema):
            return Draft202012Validator(schema, registry=registry)
    except ImportError:
        def validator(schema):
            base = schema.get("$id", "") if isinstance(schema, dict) else ""
            resolver = jsonschema.RefResolver(base_uri=base, referrer=schema, store=dict(by_id))
            return Draft202012Validator(schema, resolver=resolver)

    def subschema(file_name, pointer):
        doc = by_id["https://xdpvhost.invalid/proto/" + file_name]
        if not pointer:
            return doc
        # A wrapper that refers into the document keeps $ref resolution in its scope.
        return {"$ref": doc["$id"] + "#" + pointer}

    def errors_of(schema, instance):
        return [f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
                for e in validator(schema).iter_errors(instance)]

    def expect_valid(what, schema, instance):
        errs = errors_of(schema, instance)
        if errs:
            fail(f"{what}: " + "; ".join(errs))

    checked = 0
    # Method documents and their examples.
    method_files = sorted((proto / "methods").glob("*.json"))
    if not method_files:
        fail("no method documents under methods/")
    for path in method_files:
        doc = docs.get(path)
        if doc is None:
            continue
        name = path.name[:-len(".json")]
        if doc.get("title") != name:
            fail(f"{path}: title {doc.get('title')!r} is not the method name {name!r}")
        if doc["$id"] != f"https://xdpvhost.invalid/proto/methods/{name}.json":
            fail(f"{path}: unexpected $id {doc['$id']}")
        for key in ("params", "result"):
            if key not in doc.get("$defs", {}):
                fail(f"{path}: no $defs/{key}")
        examples = doc.get("examples", [])
        if not examples:
            fail(f"{path}: no examples")
        for i, ex in enumerate(examples):
            expect_valid(f"{path} examples[{i}]", doc, ex)
            checked += 1

    # Config examples.
    config = by_id["https://xdpvhost.invalid/proto/config.schema.json"]
    config_examples = sorted((proto / "examples").glob("config-*.json"))
    if not config_examples:
        fail("no proto/examples/config-*.json")
    for path in config_examples:
        expect_valid(str(path), config, load(path))
        checked += 1
    for i, ex in enumerate(config.get("examples", [])):
        expect_valid(f"config.schema.json examples[{i}]", config, ex)
        checked += 1

    # The error table.
    expect_valid("errors.json", subschema("rpc.schema.json", "/$defs/error_table"), load(proto / "errors.json"))
    checked += 1

    # Shared valid/invalid cases.
    cases = load(cases_file)
    for i, case in enumerate(cases):
        if "inline" in case:
            schema = case["inline"]
            if isinstance(schema, dict):
                # Relative references resolve next to the proto documents.
                schema = dict(schema, **{"$id": f"https://xdpvhost.invalid/proto/case-{i}.json"})
        else:
            schema = subschema(case["schema"], case.get("pointer", ""))
        errs = errors_of(schema, case["instance"])
        if case["valid"] and errs:
            fail(f"case {i} ({case.get('note', '')}) should be valid: " + "; ".join(errs))
        if not case["valid"] and not errs:
            fail(f"case {i} ({case.get('note', '')}) should be invalid but validates")
        checked += 1

    print(f"jsonschema {getattr(jsonschema, '__version__', '?')}: {checked} instances checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
