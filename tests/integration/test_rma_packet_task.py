"""gpufleet.core.rma_packet as a playbook runs it on the controller: the packet of a node the default store under the
report root knows, written into the run folder; check mode writes nothing; a node the store does not know fails
the task naming it."""

import os
import subprocess
import sys
import tarfile

import yaml

from ansible_collections.gpufleet.core.plugins.plugin_utils.quarantine.service_state import record_service_events
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import StoreSettings

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PLAYBOOK_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_task(tmp_path, args, check=False):
    play = [{"hosts": "localhost", "gather_facts": False,
             "tasks": [{"name": "RMA packet", "gpufleet.core.rma_packet": args}]}]
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(play, sort_keys=False))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    argv = [PLAYBOOK_BIN, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=%s" % sys.executable,
            str(playbook)] + (["--check"] if check else [])
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_the_task_writes_the_packet_and_check_mode_does_not(tmp_path):
    report_root = tmp_path / "reports"
    record_service_events(StoreSettings("sqlite:///%s" % (report_root / "gpufleet.sqlite")),
                          [{"host": "node-3", "event": "quarantined", "rule": "hardware.gpu_lost"}])
    args = {"host": "node-3", "run_folder": str(report_root / "q1"), "report_root": str(report_root)}
    checked = run_task(tmp_path, args, check=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert not (report_root / "q1").exists()
    written = run_task(tmp_path, args)
    assert written.returncode == 0, written.stdout + written.stderr
    with tarfile.open(str(report_root / "q1" / "rma" / "node-3.tar.gz")) as archive:
        assert archive.getnames()[:2] == ["rma-node-3/manifest.json", "rma-node-3/README.txt"]
    unknown = run_task(tmp_path, dict(args, host="node-9"))
    assert unknown.returncode != 0 and "the run store knows nothing of node-9" in unknown.stdout
