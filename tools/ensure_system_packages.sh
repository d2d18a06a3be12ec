#!/usr/bin/env bash
# Installs the Debian packages the tests need when they are missing: Chromium renders report.html in a test,
# PostgreSQL serves the run store tests (tests/support/postgres.py), systemd-analyze checks the scheduling
# units, ipmi_sim and ipmitool are the BMC test's IPMI endpoint and its client, jq runs the README's one-liners on
# report.json, promtool checks and unit-tests the alert rules (contrib/prometheus) and Prometheus with node_exporter
# scrape the demo's gpufleet.prom in the dashboard test (tests/integration/test_monitoring.py; each started by the
# test on loopback, on free ports: the services the packages would start are disabled). A fresh machine or CI has
# none of them; this is the only place that installs them.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
# systemd-analyze verify checks contrib/systemd's units (tests/unit/collection/test_scheduling_units.py)
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v ipmi_sim >/dev/null 2>&1 || missing+=(openipmi)
command -v ipmitool >/dev/null 2>&1 || missing+=(ipmitool)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v prometheus-node-exporter >/dev/null 2>&1 || missing+=(prometheus-node-exporter)
# the README's jq one-liners run on a demo audit's report.json (tests/integration/test_report_jq.py)
command -v jq >/dev/null 2>&1 || missing+=(jq)

if ((${#missing[@]} == 0)); then
    exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "ensure_system_packages.sh: missing ${missing[*]}; install them as root with apt-get" >&2
    exit 1
fi
echo "ensure_system_packages.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# the packages' own services (ports 9090 and 9100) are not what the tests use: never leave them running
for service in prometheus prometheus-node-exporter; do
    if [[ " ${missing[*]} " == *" $service "* ]] && command -v systemctl >/dev/null 2>&1; then
        systemctl disable --now "$service.service" >/dev/null 2>&1 || true
    fi
done
