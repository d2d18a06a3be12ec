"""bmc_facts with protocol=redfish against a Redfish service on loopback (http.server serving the project's own
documents behind basic authentication: a legacy Power and Thermal chassis, and one of the newer model with its
PowerSubsystem, ThermalSubsystem, EnvironmentMetrics and a paged SEL), through the module's real HTTP client
(open_url)."""

import base64
import calendar
import http.server
import json
import threading

import pytest

from ansible_collections.gpufleet.core.plugins.module_utils.bmc_lan import RedfishClient, read_redfish_bmc
from tests.support.redfish_samples import POWER, THERMAL

USER, PASSWORD = "audit", "rf-Secret-42"
DOCUMENTS = {
    "/redfish/v1/Chassis": {"Members": [{"@odata.id": "/redfish/v1/Chassis/1"}]},
    "/redfish/v1/Chassis/1/Power": POWER,
    "/redfish/v1/Chassis/1/Thermal": THERMAL,
}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the name http.server calls
        expected = "Basic " + base64.b64encode(("%s:%s" % (USER, PASSWORD)).encode()).decode()
        if self.headers.get("Authorization") != expected:
            self.send_response(401)
            self.end_headers()
            return
        document = DOCUMENTS.get(self.path)
        if document is None:
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def service():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield "http://127.0.0.1:%d" % server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_redfish_chassis_is_read(service):
    bmc = read_redfish_bmc(RedfishClient(service, USER, PASSWORD, 10), "127.0.0.1")
    assert bmc["status"] == "complete" and bmc["source"] == "redfish" and bmc["sel"] is None
    assert [fan["name"] for fan in bmc["fans"] if fan["failed"]] == ["Fan 3"]
    assert bmc["redundancy"][0]["state"] == "lost" and bmc["power_draw_w"] == 6120.0
    assert PASSWORD not in json.dumps(bmc)


def test_named_chassis_missing_document_is_partial(service):
    DOCUMENTS["/redfish/v1/Chassis/2/Power"] = POWER
    try:
        bmc = read_redfish_bmc(RedfishClient(service, USER, PASSWORD, 10), "127.0.0.1", chassis="2")
    finally:
        del DOCUMENTS["/redfish/v1/Chassis/2/Power"]
    assert bmc["status"] == "partial" and bmc["errors"][0]["call"] == "GET /redfish/v1/Chassis/2/Thermal"
    assert "404" in bmc["errors"][0]["reason"] and bmc["power_supplies"]


def test_wrong_password_is_a_failed_bmc(service):
    bmc = read_redfish_bmc(RedfishClient(service, USER, "wrong-pass-99", 10), "127.0.0.1")
    assert bmc["status"] == "failed" and "401" in bmc["errors"][0]["reason"]
    assert "wrong-pass-99" not in json.dumps(bmc)


def test_no_service_is_a_failed_bmc():
    bmc = read_redfish_bmc(RedfishClient("http://127.0.0.1:9", USER, PASSWORD, 3), "127.0.0.1")
    assert bmc["status"] == "failed" and bmc["errors"][0]["call"] == "GET /redfish/v1/Chassis"


# A chassis of the newer model, written for these tests: PowerSubsystem with its supplies as links (one Disabled),
# ThermalSubsystem with ThermalMetrics and a leak detector that found liquid, EnvironmentMetrics, and a SEL of two
# pages.
NEW_MODEL = {
    "/redfish/v1/Chassis/GB": {
        "PowerSubsystem": {"@odata.id": "/redfish/v1/Chassis/GB/PowerSubsystem"},
        "ThermalSubsystem": {"@odata.id": "/redfish/v1/Chassis/GB/ThermalSubsystem"},
        "EnvironmentMetrics": {"@odata.id": "/redfish/v1/Chassis/GB/EnvironmentMetrics"}},
    "/redfish/v1/Chassis/GB/PowerSubsystem": {
        "PowerSupplies": {"@odata.id": "/redfish/v1/Chassis/GB/PowerSubsystem/PowerSupplies"},
        "PowerSupplyRedundancy": [{"RedundancyType": "Failover", "MinNeededForFaultTolerance": 2,
                                   "ActiveRedundancyGroup": [{"@odata.id": "/x/0"}], "Status": {"State": "Enabled", "Health": "OK"}}]},
    "/redfish/v1/Chassis/GB/PowerSubsystem/PowerSupplies": {"Members": [
        {"@odata.id": "/redfish/v1/Chassis/GB/PowerSubsystem/PowerSupplies/0"},
        {"@odata.id": "/redfish/v1/Chassis/GB/PowerSubsystem/PowerSupplies/1"}]},
    "/redfish/v1/Chassis/GB/PowerSubsystem/PowerSupplies/0": {"Name": "PSU 0", "Status": {"State": "Enabled", "Health": "OK"}},
    "/redfish/v1/Chassis/GB/PowerSubsystem/PowerSupplies/1": {"Name": "PSU 1", "Status": {"State": "Disabled", "Health": "OK"}},
    "/redfish/v1/Chassis/GB/ThermalSubsystem": {
        "ThermalMetrics": {"@odata.id": "/redfish/v1/Chassis/GB/ThermalSubsystem/ThermalMetrics"},
        "LeakDetection": {"@odata.id": "/redfish/v1/Chassis/GB/ThermalSubsystem/LeakDetection"}},
    "/redfish/v1/Chassis/GB/ThermalSubsystem/ThermalMetrics": {
        "TemperatureSummaryCelsius": {"Intake": {"Reading": 27.5}, "Exhaust": {"Reading": 49}}},
    "/redfish/v1/Chassis/GB/ThermalSubsystem/LeakDetection": {
        "LeakDetectors": {"@odata.id": "/redfish/v1/Chassis/GB/ThermalSubsystem/LeakDetection/LeakDetectors"}},
    "/redfish/v1/Chassis/GB/ThermalSubsystem/LeakDetection/LeakDetectors": {"Members": [
        {"@odata.id": "/redfish/v1/Chassis/GB/ThermalSubsystem/LeakDetection/LeakDetectors/Tray"}]},
    "/redfish/v1/Chassis/GB/ThermalSubsystem/LeakDetection/LeakDetectors/Tray": {
        "Name": "Tray leak", "LeakDetectorType": "Moisture", "DetectorState": "Critical", "Status": {"State": "Enabled", "Health": "Critical"}},
    "/redfish/v1/Chassis/GB/EnvironmentMetrics": {"PowerWatts": {"Reading": 5120}},
    "/redfish/v1/Systems": {"Members": [{"@odata.id": "/redfish/v1/Systems/GB"}]},
    "/redfish/v1/Systems/GB/LogServices": {"Members": [{"@odata.id": "/redfish/v1/Systems/GB/LogServices/EventLog"},
                                                       {"@odata.id": "/redfish/v1/Systems/GB/LogServices/SEL"}]},
    "/redfish/v1/Systems/GB/LogServices/SEL/Entries": {
        "Members": [{"Id": "1", "Created": "2026-11-30T05:00:00Z", "Severity": "Critical", "Message": "PSU 1 failure"}],
        "@odata.nextLink": "/redfish/v1/Systems/GB/LogServices/SEL/Entries?$skip=1"},
    "/redfish/v1/Systems/GB/LogServices/SEL/Entries?$skip=1": {
        "Members": [{"Id": "2", "Created": "2026-11-30T05:10:00Z", "Severity": "OK", "Message": "Log entry"}]},
}


def test_newer_model_chassis_and_sel_are_read(service):
    DOCUMENTS.update(NEW_MODEL)
    try:
        bmc = read_redfish_bmc(RedfishClient(service, USER, PASSWORD, 10), "127.0.0.1", chassis="GB",
                               now=calendar.timegm((2026, 11, 30, 6, 0, 0)), window_hours=72)
    finally:
        for path in NEW_MODEL:
            del DOCUMENTS[path]
    assert bmc["status"] == "complete", bmc["errors"]
    assert [(psu["name"], psu["offline"]) for psu in bmc["power_supplies"]] == [("PSU 0", False), ("PSU 1", True)]
    assert bmc["redundancy"][0]["state"] == "non_redundant"
    assert (bmc["inlet_temperature_c"], bmc["exhaust_temperature_c"], bmc["power_draw_w"]) == (27.5, 49.0, 5120.0)
    assert [item["name"] for item in bmc["leak_detectors"]] == ["Tray leak"]
    assert [event["id"] for event in bmc["sel"]["events"]] == ["1", "2"] and bmc["sel"]["by_severity"]["critical"] == 1


def test_a_linked_document_that_fails_is_an_error(service):
    DOCUMENTS.update(NEW_MODEL)
    missing = DOCUMENTS.pop("/redfish/v1/Chassis/GB/ThermalSubsystem/ThermalMetrics")
    try:
        bmc = read_redfish_bmc(RedfishClient(service, USER, PASSWORD, 10), "127.0.0.1", chassis="GB")
    finally:
        DOCUMENTS["/redfish/v1/Chassis/GB/ThermalSubsystem/ThermalMetrics"] = missing
        for path in NEW_MODEL:
            del DOCUMENTS[path]
    assert bmc["status"] == "partial"
    assert [error["call"] for error in bmc["errors"]] == ["GET /redfish/v1/Chassis/GB/ThermalSubsystem/ThermalMetrics"]
    assert bmc["power_supplies"] and bmc["inlet_temperature_c"] is None
