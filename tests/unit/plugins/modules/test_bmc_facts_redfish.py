"""bmc_facts with protocol=redfish against a Redfish service on loopback (http.server serving the project's own
Power and Thermal documents behind basic authentication), through the module's real HTTP client (open_url)."""

import base64
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
