"""Report inputs: findings, runs, hostile and large fleets, and readers of the rendered reports."""

import functools
import os

import xmlschema


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
JUNIT_XSD = os.path.join(ROOT, "tests", "fixtures", "junit", "junit-10.xsd")
HOSTILE_PROCESS = "<script>alert(1)</script>"
HOSTILE_HOST = 'evil"</script><script>document.documentElement.setAttribute("data-pwned","1")</script>'
HOSTILE_SUMMARY = 'GPU <img src=x onerror="document.title=\'pwned\'"> & "quotes" \\ back\nslash\x00\x1b'
RUN = {
    "id": "20260301T120000Z",
    "started_at": "2026-03-01T12:00:00Z",
    "finished_at": "2026-03-01T12:03:10Z",
    "tool_version": "0.1.0",
    "fail_severity": "critical",
    "policy_errors": [],
}


RULES_RUN = [
    "driver.kernel_userspace_mismatch", "driver.persistence_mode_off", "hardware.pcie_link_degraded",
    "hardware.xid", "scheduling.mig_layout_drift", "workload.gpu_oversubscribed", "workload.memory_near_full",
]


def finding(rule, severity, host, gpu=None, summary=None, evidence=None, action="Look at it.", fix=None):
    return {
        "rule": rule,
        "layer": rule.split(".", 1)[0],
        "severity": severity,
        "host": host,
        "gpu": gpu,
        "summary": summary or "%s on %s" % (rule, host),
        "evidence": evidence if evidence is not None else {},
        "action": action,
        "fix": fix,
    }


def demo_like_inputs():
    """A small fleet with one problem per host, like the demo inventory: (run, hosts, findings_by_host, causes)."""
    findings = {
        "dgx-h100-01": [
            finding("hardware.xid", "critical", "dgx-h100-01", "00000000:1B:00.0",
                    "Xid 79: GPU has fallen off the bus",
                    {"xid": 79, "count": 3, "last_seen": "2026-03-01T03:12:44Z",
                     "message": "NVRM: Xid (PCI:0000:1b:00): 79, pid='<unknown>', name=<unknown>, "
                                "GPU has fallen off the bus."},
                    "Drain the node and hand the GPU over for repair."),
            finding("hardware.pcie_link_degraded", "info", "dgx-h100-01", "00000000:43:00.0",
                    "PCIe link at Gen5 x8, the GPU supports Gen5 x16",
                    {"pcie_gen_current": 5, "pcie_width_current": 8, "pcie_width_max": 16},
                    "Reseat the card or check the riser at the next maintenance."),
        ],
        "dgx-h100-02": [
            finding("driver.kernel_userspace_mismatch", "critical", "dgx-h100-02", None,
                    "Kernel module 550.90.07 but NVML library 550.54.15",
                    {"kernel_module": "550.90.07", "nvml_library": "550.54.15"},
                    "Reinstall one driver version for both, then reboot.", "driver"),
        ],
        "dgx-a100-03": [
            finding("scheduling.mig_layout_drift", "warning", "dgx-a100-03", "00000000:07:00.0",
                    "MIG layout differs from all-3g.40gb",
                    {"desired": {"3g.40gb": 2}, "actual": {"1g.10gb": 7}, "config": "all-3g.40gb"},
                    "Apply the desired MIG layout (drains the GPU).", "mig_layout"),
        ],
        "infer-04": [
            finding("workload.gpu_oversubscribed", "warning", "infer-04", "00000000:3B:00.0",
                    "5 processes share the GPU, the policy allows 2",
                    {"processes": [{"pid": 4242, "name": "python3 serve.py", "used_memory_mib": 10240},
                                   {"pid": 4243, "name": HOSTILE_PROCESS, "used_memory_mib": 9216}],
                     "max_processes_per_gpu": 2},
                    "Lower the workers per GPU of the service.", "worker_limits"),
            finding("workload.memory_near_full", "warning", "infer-04", "00000000:3B:00.0",
                    "GPU memory 78,112 of 81,559 MiB in use (95.8%)",
                    {"memory_used_mib": 78112, "memory_total_mib": 81559, "threshold_pct": 92},
                    "Fewer workers or smaller batches on this GPU.", "worker_limits"),
        ],
        "dgx-h100-06": [
            finding("driver.persistence_mode_off", "warning", "dgx-h100-06", None,
                    "Persistence mode is off on 8 of 8 GPUs", {"gpus_without_persistence": 8},
                    "Enable persistence mode.", "gpu_settings"),
        ],
    }
    hosts = {name: {"status": "ok", "facts_file": "facts/%s.json" % name, "message": None} for name in findings}
    hosts["healthy-07"] = {"status": "ok", "facts_file": "facts/healthy-07.json", "message": None}
    hosts["dgx-h100-08"] = {"status": "unreachable", "facts_file": None,
                            "message": "Failed to connect to the host via ssh: Connection timed out"}
    hosts["dgx-h100-09"] = {"status": "failed", "facts_file": None, "message": "gpu_facts: NVML timed out"}
    causes = [{
        "id": "driver:550.54.15", "kind": "driver", "layer": "driver", "severity": "critical",
        "summary": "Driver 550.54.15 is behind the errors on 2 hosts",
        "hosts": ["dgx-h100-01", "dgx-h100-02"],
        "evidence": {"driver_version": "550.54.15", "rules": ["hardware.xid", "driver.kernel_userspace_mismatch"]},
        "action": "Roll the driver forward on these hosts in a small batch first.",
    }]
    return dict(RUN, rules_run=list(RULES_RUN)), hosts, findings, causes


def large_inputs(host_count, findings_per_host=3, cause_count=1):
    """host_count hosts with 8 GPUs each and a few findings per host; every 97th host unreachable."""
    rules = [("hardware.xid", "critical"), ("driver.persistence_mode_off", "warning"),
             ("workload.gpu_oversubscribed", "warning"), ("hardware.pcie_link_degraded", "info")]
    hosts, findings = {}, {}
    for number in range(host_count):
        name = "node-%05d" % number
        if number % 97 == 5:
            hosts[name] = {"status": "unreachable", "facts_file": None, "message": "ssh: timed out"}
            continue
        hosts[name] = {"status": "ok", "facts_file": "facts/%s.json" % name, "message": None}
        findings[name] = [
            finding(rules[(number + k) % len(rules)][0], rules[(number + k) % len(rules)][1], name,
                    "00000000:%02X:00.0" % (0x18 + 0x10 * ((number + k) % 8)), evidence={"value": number})
            for k in range(findings_per_host)
        ]
    names = list(findings)
    causes = [{"id": "cause-%d" % k, "kind": "driver", "layer": "driver", "severity": "warning",
               "summary": "Cause %d" % k, "hosts": names[k::max(cause_count, 1)][:500], "evidence": {},
               "action": "Act."} for k in range(cause_count)]
    return dict(RUN, rules_run=list(RULES_RUN)), hosts, findings, causes


def hostile_inputs():
    """The demo-like fleet plus a host whose name, summary and evidence try to break out of every format."""
    run, hosts, findings, causes = demo_like_inputs()
    hosts[HOSTILE_HOST] = {"status": "ok", "facts_file": None, "message": None}
    findings[HOSTILE_HOST] = [finding(
        "workload.gpu_oversubscribed", "critical", HOSTILE_HOST, "00000000:3B:00.0", HOSTILE_SUMMARY,
        {"processes": [{"pid": 1, "name": HOSTILE_PROCESS}], "note": "</script><!--"}, HOSTILE_PROCESS)]
    causes.append({"id": "workload:" + HOSTILE_HOST, "kind": "workload", "layer": "workload",
                   "severity": "warning", "summary": HOSTILE_SUMMARY, "hosts": [HOSTILE_HOST],
                   "evidence": {"name": HOSTILE_PROCESS}, "action": HOSTILE_PROCESS})
    return run, hosts, findings, causes


@functools.cache
def load_junit_schema():
    return xmlschema.XMLSchema(JUNIT_XSD)


def embedded_data(page):
    start = page.index('<script type="application/json" id="gpufleet-data">') + len(
        '<script type="application/json" id="gpufleet-data">')
    return page[start:page.index("</script>", start)]
