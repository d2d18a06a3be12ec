# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A load command for the simulated fleet that follows loadstep.yml's contract (docs/loadstep.md).

Reads the step's concurrency from GPUFLEET_LOAD_CONCURRENCY and its seconds from GPUFLEET_LOAD_DURATION_SEC,
starts gpu-worker with that many workers (its other settings from the environment: MEM_PER_WORKER_MIB,
CUDA_VISIBLE_DEVICES, NAME) and prints one JSON line per interval of 0.25 s:
{"ok": true, "latency_ms": L, "count": N} while every worker runs, where L grows with the concurrency
(BASE_LATENCY_MS, default 20, plus 10% per worker beyond the first). When the workers fail (a CUDA out of
memory) it prints {"ok": false, "error": "<what the worker said>"} and exits 1; at the end of its seconds it
stops the workers and exits 0.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import json
import os
import signal
import subprocess
import sys
import time

INTERVAL = 0.25
WORKER = "/usr/local/bin/gpu-worker"


def latency_ms(concurrency, tick, base):
    return round(base * (1 + 0.1 * (concurrency - 1)) + (tick % 5), 1)


def emit(record):
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def main():
    concurrency = int(os.environ.get("GPUFLEET_LOAD_CONCURRENCY", "1"))
    seconds = float(os.environ.get("GPUFLEET_LOAD_DURATION_SEC", "10"))
    base = float(os.environ.get("BASE_LATENCY_MS", "20"))
    environment = dict(os.environ, WORKERS=str(concurrency))
    worker = subprocess.Popen([os.environ.get("GPU_WORKER", WORKER)], env=environment, stderr=subprocess.PIPE)

    def stop(_signum, _frame):
        worker.terminate()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    end = time.monotonic() + seconds
    tick = 0
    time.sleep(0.3)  # the workers register
    while time.monotonic() < end:
        if worker.poll() is not None:
            lines = worker.stderr.read().decode("utf-8", "replace").strip().splitlines()
            emit({"ok": False, "error": lines[0] if lines else "the workers exited with %d" % worker.returncode})
            return 1
        emit({"ok": True, "latency_ms": latency_ms(concurrency, tick, base), "count": concurrency})
        tick += 1
        time.sleep(INTERVAL)
    worker.terminate()
    worker.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
