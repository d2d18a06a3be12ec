"""A kubectl stand-in for the tests of quarantine.yml (docs/quarantine.md, "The Kubernetes stand-in").

It answers exactly the calls recorded in recorded.json beside it (get node -o json, cordon, uncordon, taint and its
removal, patch --subresource=status), applies each call's request to the node object kept in
$KUBECTL_STANDIN_DIR/nodes/<name>.json as the API server would (strategic merge: node conditions merge by type),
appends the request to $KUBECTL_STANDIN_DIR/requests.jsonl, and fails on any other call."""

import json
import os
import sys

RECORDED = os.path.join(os.path.dirname(os.path.realpath(__file__)), "recorded.json")


def load(path):
    with open(path) as handle:
        return json.load(handle)


def answer(entry, name, **words):
    text = dict(entry)
    for stream in ("stdout", "stderr"):
        line = text.get(stream, "")
        for word, value in dict(words, NAME=name).items():
            line = line.replace(word, value)
        if line:
            (sys.stdout if stream == "stdout" else sys.stderr).write(line + "\n")
    return entry["rc"]


class Standin:
    def __init__(self):
        self.dir = os.environ["KUBECTL_STANDIN_DIR"]
        self.recorded = load(RECORDED)

    def node_path(self, name):
        return os.path.join(self.dir, "nodes", "%s.json" % name)

    def node(self, name):
        path = self.node_path(name)
        return load(path) if os.path.exists(path) else None

    def save(self, node):
        node["metadata"]["resourceVersion"] = str(int(node["metadata"].get("resourceVersion", "0")) + 1)
        path = self.node_path(node["metadata"]["name"])
        with open(path + ".new", "w") as handle:
            json.dump(node, handle, indent=4)
        os.rename(path + ".new", path)

    def log(self, call, name, body):
        request = dict(self.recorded["calls"][call]["request"])
        request["path"] = request["path"].replace("NAME", name)
        if "body" in request:
            request["body"] = body
        with open(os.path.join(self.dir, "requests.jsonl"), "a") as handle:
            handle.write(json.dumps(dict(request, call=call), sort_keys=True) + "\n")

    def not_recorded(self, argv):
        return answer(self.recorded["not_recorded"], "", ARGV=" ".join(argv))

    def run(self, argv):
        calls = self.recorded["calls"]
        if len(argv) == 4 and argv[:2] == ["get", "node"] and argv[3] in ("--output=json", "-o=json"):
            return self.get(argv[2], calls["get"])
        if len(argv) == 2 and argv[0] in ("cordon", "uncordon"):
            return self.cordon(argv[1], argv[0] == "cordon", calls[argv[0]])
        if len(argv) == 5 and argv[:2] == ["taint", "nodes"] and argv[4] == "--overwrite" and "=" in argv[3]:
            return self.taint(argv[2], argv[3], calls["taint"])
        if len(argv) == 4 and argv[:2] == ["taint", "nodes"] and argv[3].endswith("-") and "=" not in argv[3]:
            return self.untaint(argv[2], argv[3][:-1], calls["untaint"])
        if (len(argv) == 6 and argv[:2] == ["patch", "node"] and argv[3:5] == ["--subresource=status", "--type=strategic"]
                and argv[5].startswith("--patch=")):
            return self.patch_status(argv[2], json.loads(argv[5][len("--patch="):]), calls["patch_status"])
        return self.not_recorded(argv)

    def get(self, name, call):
        node = self.node(name)
        self.log("get", name, None)
        if node is None:
            return answer(call["answers"]["not_found"], name)
        sys.stdout.write(json.dumps(node, indent=4) + "\n")
        return 0

    def cordon(self, name, unschedulable, call):
        node = self.node(name)
        if node is None:
            return answer(self.recorded["calls"]["get"]["answers"]["not_found"], name)
        self.log("cordon" if unschedulable else "uncordon", name, call["request"]["body"])
        if bool(node["spec"].get("unschedulable")) == unschedulable:
            return answer(call["answers"]["unchanged"], name)
        if unschedulable:
            node["spec"]["unschedulable"] = True
        else:
            node["spec"].pop("unschedulable", None)
        self.save(node)
        return answer(call["answers"]["changed"], name)

    def taint(self, name, text, call):
        node = self.node(name)
        if node is None:
            return answer(self.recorded["calls"]["get"]["answers"]["not_found"], name)
        key_value, effect = text.rsplit(":", 1)
        key, value = key_value.split("=", 1)
        taints = [t for t in node["spec"].get("taints") or [] if not (t["key"] == key and t["effect"] == effect)]
        new = {"key": key, "value": value, "effect": effect}
        changed = new not in (node["spec"].get("taints") or [])
        taints.append(new)
        self.log("taint", name, {"spec": {"taints": taints}})
        if not changed:
            return answer(call["answers"]["unchanged"], name)
        node["spec"]["taints"] = taints
        self.save(node)
        return answer(call["answers"]["changed"], name)

    def untaint(self, name, text, call):
        node = self.node(name)
        if node is None:
            return answer(self.recorded["calls"]["get"]["answers"]["not_found"], name)
        key, effect = text.rsplit(":", 1)
        before = node["spec"].get("taints") or []
        taints = [t for t in before if not (t["key"] == key and t["effect"] == effect)]
        if taints == before:
            return answer(call["answers"]["missing"], name, KEY=key, EFFECT=effect)
        self.log("untaint", name, {"spec": {"taints": taints}})
        if taints:
            node["spec"]["taints"] = taints
        else:
            node["spec"].pop("taints", None)
        self.save(node)
        return answer(call["answers"]["changed"], name)

    def patch_status(self, name, patch, call):
        node = self.node(name)
        if node is None:
            return answer(self.recorded["calls"]["get"]["answers"]["not_found"], name)
        self.log("patch_status", name, patch)
        conditions = list(node["status"].get("conditions") or [])
        before = json.dumps(conditions, sort_keys=True)
        for condition in (patch.get("status") or {}).get("conditions") or []:
            found = [i for i, c in enumerate(conditions) if c.get("type") == condition.get("type")]
            if found:
                conditions[found[0]] = dict(conditions[found[0]], **condition)
            else:
                conditions.append(condition)
        if json.dumps(conditions, sort_keys=True) == before:
            return answer(call["answers"]["unchanged"], name)
        node["status"]["conditions"] = conditions
        self.save(node)
        return answer(call["answers"]["changed"], name)


if __name__ == "__main__":
    sys.exit(Standin().run(sys.argv[1:]))
