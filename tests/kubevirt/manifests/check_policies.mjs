// THE STAND-IN for the API server's ValidatingAdmissionPolicy admission
// (k8s.io/apiserver pkg/admission/plugin/policy/validating), which cannot
// run here: it evaluates the policies' CEL expressions with a real CEL
// evaluator (@bufbuild/cel, conformance-tested against cel-spec) and keeps
// only the admission steps around them, as documented for
// admissionregistration.k8s.io/v1:
// - a policy applies only through a binding (validationActions: Deny);
// - matchConstraints.resourceRules match group, version, operation and
//   resource ("resourceclaims/status" for the subresource);
// - every matchCondition must be true, else the policy does not apply;
// - variables are evaluated in order, as variables.<name>;
// - a validation that is false denies with its messageExpression, else its
//   message; an evaluation error denies under failurePolicy Fail.
// Objects are given as the API server hands them to CEL (unstructured:
// a field that is not set is absent, reading it is an error).
//
// Input: a JSON file {policies: [...], bindings: [...], requests: [{name,
// operation, userInfo, group, version, resource, subResource, object,
// oldObject}]}. Output: one line per request, "<name>: allowed" or
// "<name>: denied by <policy>: <message>".
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(process.env.XDPVHOST_MANIFEST_TOOLING || path.join(here, "tooling"), "node_modules");
const { run } = await import(pathToFileURL(path.join(modules, "@bufbuild", "cel", "dist", "esm", "index.js")).href);

function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === "object") return new Map(Object.entries(v).map(([k, x]) => [k, toCel(x)]));
  if (Number.isInteger(v)) return BigInt(v);
  return v;
}

function matches(list, value) {
  return (list || []).includes("*") || (list || []).includes(value);
}

function ruleMatches(rule, req) {
  const resource = req.subResource ? `${req.resource}/${req.subResource}` : req.resource;
  return matches(rule.apiGroups, req.group) && matches(rule.apiVersions, req.version) &&
    matches(rule.operations, req.operation) && matches(rule.resources, resource);
}

function admit(policy, req) {
  const spec = policy.spec;
  if (!(spec.matchConstraints?.resourceRules || []).some((r) => ruleMatches(r, req))) return null;
  const request = { operation: req.operation, userInfo: req.userInfo,
    resource: { group: req.group, version: req.version, resource: req.resource } };
  if (req.subResource) request.subResource = req.subResource;
  const variables = new Map();
  const env = { request: toCel(request), object: toCel(req.object ?? null),
    oldObject: toCel(req.oldObject ?? null), variables };
  const fail = spec.failurePolicy !== "Ignore";
  try {
    for (const c of spec.matchConditions || []) {
      if (run(c.expression, env) !== true) return null;
    }
    for (const v of spec.variables || []) variables.set(v.name, run(v.expression, env));
  } catch (e) {
    return fail ? `evaluation error: ${e.message.split("\n")[0]}` : null;
  }
  for (const v of spec.validations || []) {
    let ok;
    try {
      ok = run(v.expression, env);
    } catch (e) {
      if (fail) return `evaluation error: ${e.message.split("\n")[0]}`;
      continue;
    }
    if (ok === true) continue;
    if (v.messageExpression) {
      try {
        const m = run(v.messageExpression, env);
        if (typeof m === "string" && m.trim()) return m;
      } catch (e) { /* the API server falls back to message */ }
    }
    return v.message || `failed expression: ${v.expression}`;
  }
  return null;
}

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const bound = new Set(input.bindings.filter((b) => (b.spec.validationActions || []).includes("Deny"))
  .map((b) => b.spec.policyName));
for (const req of input.requests) {
  let verdict = "allowed";
  for (const policy of input.policies) {
    if (!bound.has(policy.metadata.name)) continue;
    const denied = admit(policy, req);
    if (denied !== null) {
      verdict = `denied by ${policy.metadata.name}: ${denied.replace(/\s+/g, " ").trim()}`;
      break;
    }
  }
  console.log(`${req.name}: ${verdict}`);
}
