"""A real Prometheus and node_exporter (Debian's packages) for a test: node_exporter with only its textfile
collector, on 127.0.0.1 and a free port, reading a folder; Prometheus on 127.0.0.1 and another free port, with
its own configuration and storage in a temporary folder, scraping it every second. Never the system's instances
or their ports (9090, 9100). Binaries missing: skip, or fail under GPUFLEET_PROMETHEUS_REQUIRED (promtool.py)."""

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

from tests.support.promtool import binary

START_SECONDS = 60


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def wait_for(url, log, process):
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError("%s exited with %s: %s" % (process.args[0], process.returncode, read(log)))
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise AssertionError("%s did not answer %s in %d s: %s" % (process.args[0], url, START_SECONDS, read(log)))


def read(path):
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()[-3000:]


class Prometheus:
    """The HTTP API of the Prometheus a test started."""

    def __init__(self, port):
        self.base = "http://127.0.0.1:%d" % port

    def get(self, path, **params):
        url = "%s%s?%s" % (self.base, path, urllib.parse.urlencode(params))
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                document = json.load(answer)
        except urllib.error.HTTPError as exc:  # 400, 422: a query Prometheus refused, its reason in the body
            raise AssertionError("%s: %s %s" % (params, exc.code, exc.read().decode("utf-8", "replace")))
        assert document["status"] == "success", document
        return document["data"]

    def query(self, expr):
        return self.get("/api/v1/query", query=expr)["result"]

    def wait_for_series(self, expr, seconds=START_SECONDS):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            result = self.query(expr)
            if result:
                return result
            time.sleep(0.5)
        raise AssertionError("no series for %s after %d s" % (expr, seconds))


@contextlib.contextmanager
def prometheus_scraping_textfiles(textfile_dir, work_dir, rule_files=()):
    """Yields a Prometheus whose only target is a node_exporter reading textfile_dir; both stopped afterwards."""
    node_exporter, prometheus = binary("prometheus-node-exporter"), binary("prometheus")
    exporter_port, prometheus_port = free_port(), free_port()
    config = os.path.join(str(work_dir), "prometheus.yml")
    with open(config, "w", encoding="utf-8") as handle:
        yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                        "rule_files": [os.path.abspath(path) for path in rule_files],
                        "scrape_configs": [{"job_name": "node", "static_configs": [
                            {"targets": ["127.0.0.1:%d" % exporter_port]}]}]}, handle)
    processes = []
    try:
        exporter_log = os.path.join(str(work_dir), "node_exporter.log")
        with open(exporter_log, "w") as log:
            processes.append(subprocess.Popen([
                node_exporter, "--web.listen-address=127.0.0.1:%d" % exporter_port, "--collector.disable-defaults",
                "--collector.textfile", "--collector.textfile.directory=%s" % textfile_dir],
                stdout=log, stderr=subprocess.STDOUT))
        wait_for("http://127.0.0.1:%d/metrics" % exporter_port, exporter_log, processes[-1])
        prometheus_log = os.path.join(str(work_dir), "prometheus.log")
        with open(prometheus_log, "w") as log:
            processes.append(subprocess.Popen([
                prometheus, "--config.file=%s" % config, "--storage.tsdb.path=%s" % os.path.join(str(work_dir), "tsdb"),
                "--web.listen-address=127.0.0.1:%d" % prometheus_port],
                stdout=log, stderr=subprocess.STDOUT, cwd=str(work_dir)))
        wait_for("http://127.0.0.1:%d/-/ready" % prometheus_port, prometheus_log, processes[-1])
        yield Prometheus(prometheus_port)
    finally:
        for process in reversed(processes):
            stop(process)
