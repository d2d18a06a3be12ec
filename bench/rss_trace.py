# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The memory of ansible-playbook's main process over one audit of N simulated hosts (the fleet of
bench/audit_bench.py): its RSS every 0.25 s with the task that runs, and its peak (VmHWM). bench/README.md,
section 4 ("no facts on the controller").

    .venv/bin/python bench/rss_trace.py --hosts 300 [-- -e gpufleet_store=false]
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import audit_bench
from memory_bench import status_mib
from run import eight_gpu_xml, smi_input


def trace(hosts, extra, interval=0.25):
    work = Path(tempfile.mkdtemp(prefix="gpufleet-bench-rss-"))
    try:
        smi_path, _note = smi_input(None)
        audit_bench.write_fleet(work, hosts, eight_gpu_xml(smi_path.read_text(encoding="utf-8")))
        argv = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(work / "hosts.yml"),
                "-f", str(audit_bench.FORKS), "audit.yml"] + list(extra)
        started = time.monotonic()
        process = subprocess.Popen(argv, cwd=str(audit_bench.REPO), env=audit_bench.playbook_env(work, False),
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tasks, samples, peak = [], [], [None]

        def read_output():
            for line in process.stdout:
                if line.startswith("TASK ["):
                    tasks.append((time.monotonic() - started, line[6:line.index("]")]))
        reader = threading.Thread(target=read_output, daemon=True)
        reader.start()
        while process.poll() is None:
            try:
                samples.append((time.monotonic() - started, status_mib(process.pid, "VmRSS")))
                peak[0] = status_mib(process.pid, "VmHWM")
            except OSError:
                break
            time.sleep(interval)
        reader.join(5)
        return tasks, samples, peak[0], process.returncode
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("extra", nargs="*", help="more ansible-playbook arguments (after --)")
    args = parser.parse_args(argv)
    tasks, samples, peak, code = trace(args.hosts, args.extra)
    for seconds, name in tasks:
        print("%7.1f s  TASK %s" % (seconds, name))
    step = max(1, len(samples) // 30)
    for seconds, rss in samples[::step]:
        print("%7.1f s  %7.1f MiB" % (seconds, rss))
    print("ansible-playbook exited %s; main process peak (VmHWM) %.1f MiB, %d hosts" % (code, peak or 0, args.hosts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
