"""The demo's fabric host (gpu-h100-fabric-19, group h100_fabric) judged by its group's fabric policy: the port that
trained at 2X and the port that is down are critical findings with their figures; nothing else of the fabric is."""

from tests.support.demo_fabric_checks import HOST
from tests.support.demo_fleet import demo_audit


def fabric_findings():
    return {f["rule"]: f for f in demo_audit()[1][HOST] if f["rule"].startswith(("hardware.fabric", "hardware.gpu"))}


def test_the_demo_fabric_host_shows_its_degraded_and_its_down_port():
    found = fabric_findings()
    assert sorted(found) == ["hardware.fabric_port_degraded", "hardware.fabric_port_down"]
    degraded, down = found["hardware.fabric_port_degraded"], found["hardware.fabric_port_down"]
    assert degraded["severity"] == down["severity"] == "critical"
    evidence = degraded["evidence"]
    assert (evidence["link"], evidence["rate_gbps"], evidence["expected_rate_gbps"], evidence["width"],
            evidence["expected_width"], evidence["reference"]) == ("mlx5_3/1", 200.0, 400, "2X", "4X", "policy")
    assert (down["evidence"]["link"], down["evidence"]["phys_state"], down["evidence"]["expected_by"]) == (
        "mlx5_6/1", "Polling", "fabric.hcas.names")
