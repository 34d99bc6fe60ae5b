// Validates Kubernetes, Prometheus Operator and KubeVirt objects offline
// against the API models of the npm packages in ./tooling (installed by
// scripts/bootstrap.sh from its package-lock.json):
//   - kubernetes-models and @kubernetes-models/prometheus-operator: their
//     compiled JSON Schema validators (types, required fields, enums,
//     formats), plus unknown fields, which those schemas let through but the
//     API server refuses (kubectl's field validation is Strict): every key is
//     looked up in the model's TypeScript interface, recursively;
//   - kubevirt.io/v1: the KubeVirt API models of @kubevirt-ui-ext/kubevirt-api
//     (generated from KubeVirt's OpenAPI): unknown fields, required fields
//     and primitive types, from their TypeScript interfaces. That release
//     predates DRA networks, so the two fields KubeVirt added for them
//     (kubevirt/INTERFACES.md, KubeVirt configuration and VMI fields) are
//     added here as EXTENSIONS, and nothing else.
//
//   node validate_models.mjs OBJECTS.json
// OBJECTS.json: [{"source": "...", "object": {...}}, ...]. Prints one line
// per problem; exit status 1 if there is any, 2 for an object of an
// unsupported apiVersion.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(process.env.XDPVHOST_MANIFEST_TOOLING || path.join(here, "tooling"), "node_modules");

// ---- TypeScript interface bodies -> {field: {type, optional}} -------------

function parseBody(lines) {
  const fields = {};
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line.startsWith("/**") || line.startsWith("*") || line === "") continue;
    const m = /^"?([^"?:\s]+)"?(\?)?:\s*(.*?);?$/.exec(line);
    if (!m) continue;
    let type = m[3];
    if (type === "{") {  // a map: { [key: string]: T; }
      const v = /^\[key: string\]:\s*(.*?);?$/.exec(lines[i + 1].trim());
      type = `map<${v ? v[1] : "any"}>`;
      i += 2;
    }
    fields[m[1]] = { type, optional: m[2] === "?" };
  }
  return fields;
}

function interfaceBody(text, name) {
  const re = name
    ? new RegExp(`^(?:export )?interface ${name}(?: extends [^{]+)? \\{$`, "m")
    : /^export interface \w+(?: extends [^{]+)? \{$/m;
  const m = re.exec(text);
  if (!m) return null;
  const rest = text.slice(m.index + m[0].length);
  return parseBody(rest.slice(0, rest.indexOf("\n}")).split("\n"));
}

// ---- kubernetes-models: one interface per .d.ts, types from its imports ---

const k8sCache = new Map();
function k8sModel(file) {
  if (!k8sCache.has(file)) {
    const text = fs.readFileSync(file, "utf8");
    const imports = {};
    for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm)) {
      let target = m[2].startsWith(".")
        ? path.resolve(path.dirname(file), m[2])
        : path.join(modules, m[2]);
      target = target.replace(/\.js$/, "") + ".d.ts";
      imports[m[1]] = target;
    }
    k8sCache.set(file, { fields: interfaceBody(text, null), imports });
  }
  return k8sCache.get(file);
}

// ---- KubeVirt: every interface in one .d.ts --------------------------------

const kubevirtText = () => fs.readFileSync(
  path.join(modules, "@kubevirt-ui-ext/kubevirt-api/dist/kubevirt/index.d.ts"), "utf8");
let kubevirtIndex = null;
const EXTENSIONS = {
  // kubevirt/INTERFACES.md, KubeVirt configuration and VMI fields: VMI
  // spec.networks[].resourceClaim (ClaimRequest).
  V1Network: { resourceClaim: { type: "V1ClaimRequest", optional: true } },
  V1ClaimRequest: { claimName: { type: "string", optional: true },
                    requestName: { type: "string", optional: true } },
};
function kubevirtModel(name) {
  if (!kubevirtIndex) kubevirtIndex = { text: kubevirtText(), cache: new Map() };
  if (!kubevirtIndex.cache.has(name)) {
    // The generator renames fields that clash with its own words
    // (configuration -> _configuration); the JSON key has no underscore.
    const parsed = interfaceBody(kubevirtIndex.text, name);
    const body = parsed && Object.fromEntries(Object.entries(parsed).map(([k, v]) => [k.replace(/^_/, ""), v]));
    const ext = EXTENSIONS[name];
    kubevirtIndex.cache.set(name, body || ext ? { ...(body || {}), ...(ext || {}) } : null);
  }
  return kubevirtIndex.cache.get(name);
}

// ---- the walk --------------------------------------------------------------

const problems = [];

function primitiveOk(type, value) {
  switch (type) {
    case "string": case "Date": return typeof value === "string";
    case "number": return typeof value === "number";
    case "boolean": return typeof value === "boolean";
    case "object": return value !== null && typeof value === "object" && !Array.isArray(value);
    default: return true;
  }
}

function walk(where, value, type, resolve, strictTypes) {
  type = type.trim();
  if (value === null || value === undefined) return;
  let m;
  if ((m = /^Array<(.+)>$/.exec(type)) || (m = /^(\w+)\[\]$/.exec(type))) {
    if (!Array.isArray(value)) { if (strictTypes) problems.push(`${where}: must be a list`); return; }
    value.forEach((v, i) => walk(`${where}[${i}]`, v, m[1], resolve, strictTypes));
    return;
  }
  if ((m = /^map<(.+)>$/.exec(type))) {
    if (typeof value !== "object" || Array.isArray(value)) {
      if (strictTypes) problems.push(`${where}: must be a map`); return;
    }
    for (const [k, v] of Object.entries(value)) walk(`${where}.${k}`, v, m[1], resolve, strictTypes);
    return;
  }
  const model = resolve(type);
  if (!model) {
    if (strictTypes && !primitiveOk(type, value)) problems.push(`${where}: ${JSON.stringify(value)} is not ${type}`);
    return;
  }
  if (typeof value !== "object" || Array.isArray(value)) {
    if (strictTypes) problems.push(`${where}: must be an object (${type.name || type})`);
    return;
  }
  const fields = model.fields || model;
  if (Object.keys(fields).length === 0) return;  // free-form (RawExtension)
  for (const [k, v] of Object.entries(value)) {
    if (!(k in fields)) { problems.push(`${where}.${k}: unknown field (not in ${model.label || type})`); continue; }
    walk(`${where}.${k}`, v, fields[k].type, model.child ? model.child : resolve, strictTypes);
  }
  if (strictTypes) {
    for (const [k, f] of Object.entries(fields)) {
      if (!f.optional && !(k in value)) problems.push(`${where}.${k}: required field missing`);
    }
  }
}

function k8sResolver(file) {
  return (type) => {
    if (type === "@root") return wrap(file);
    const model = k8sModel(file);
    const target = model.imports[type];
    return target && fs.existsSync(target) ? wrap(target) : null;
  };
}
function wrap(file) {
  const model = k8sModel(file);
  return model.fields ? { fields: model.fields, child: k8sResolver(file), label: path.basename(file) } : null;
}

function modelFile(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : [null, apiVersion];
  if (group === "monitoring.coreos.com")
    return path.join(modules, "@kubernetes-models/prometheus-operator", group, version, kind);
  return group === null
    ? path.join(modules, "kubernetes-models", version, kind)
    : path.join(modules, "kubernetes-models", group, version, kind);
}

const objects = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
let unsupported = false;
for (const { source, object } of objects) {
  const where = `${source}: ${object.kind}/${object.metadata && object.metadata.name}`;
  const before = problems.length;
  if (object.apiVersion === "kubevirt.io/v1") {
    const root = `V1${object.kind}`;
    if (!kubevirtModel(root)) { problems.push(`${where}: no KubeVirt model ${root}`); continue; }
    const resolve = (t) => {
      const m = kubevirtModel(t);
      return m ? { fields: m, label: t } : null;
    };
    walk(where, object, root, resolve, true);
  } else {
    const base = modelFile(object.apiVersion, object.kind);
    if (!fs.existsSync(base + ".js")) {
      console.log(`${where}: no model for ${object.apiVersion} ${object.kind}`);
      unsupported = true;
      continue;
    }
    const mod = await import(pathToFileURL(base + ".js").href);
    try {
      new mod[object.kind](object).validate();
    } catch (e) {
      problems.push(`${where}: ${e.message}`);
    }
    walk(where, object, "@root", k8sResolver(base + ".d.ts"), false);
  }
  if (problems.length === before) console.log(`ok ${where}`);
}
for (const p of problems) console.log(`PROBLEM ${p}`);
process.exit(unsupported ? 2 : problems.length ? 1 : 0);
