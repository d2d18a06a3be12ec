#!/usr/bin/env bash
# Installs the Debian packages the tests need (Chromium renders report.html in a test) when they are
# missing (ipmi_sim and ipmitool: the BMC test's IPMI endpoint and its client). A fresh machine or CI has none of
# them; this is the only place that installs them.
set -euo pipefail

missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v ipmi_sim >/dev/null 2>&1 || missing+=(openipmi)
command -v ipmitool >/dev/null 2>&1 || missing+=(ipmitool)

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
