"""docs/xid-table.md is generated from the Xid catalog and decode tables, and kept current."""

import os
import subprocess
import sys

from tests.support.schema_check import ROOT

TOOL = os.path.join(ROOT, "tools", "xid_table.py")


def _import_tool():
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    try:
        import xid_table
    finally:
        sys.path.pop(0)
    return xid_table


def test_the_committed_table_is_current():
    check = subprocess.run([sys.executable, TOOL, "--check"], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr


def test_check_fails_on_a_stale_table(tmp_path, monkeypatch):
    tool = _import_tool()
    stale = tmp_path / "xid-table.md"
    stale.write_text(tool.render().replace("| 151 | Key rotation Error | RESTART_VM | driver | critical",
                                           "| 151 | Key rotation Error | RESTART_VM | driver | warning"))
    monkeypatch.setattr(tool, "TABLE_FILE", str(stale))
    monkeypatch.setattr(sys, "argv", ["xid_table.py", "--check"])
    assert tool.main() == 1


def test_the_table_lists_every_xid_its_bucket_and_every_departure():
    text = _import_tool().render()
    xids = text.split("## Xids")[1].split("\n## ")[0]
    rows = [line for line in xids.splitlines() if line.startswith("| ") and line.split("|")[1].strip().isdigit()]
    assert [int(row.split("|")[1]) for row in rows] == list(range(1, 174))
    assert "| 32 | Invalid or corrupted push buffer stream | RESTART_APP | hardware | warning |" in text
    assert "- **Xid 109** (Context Switch Timeout Error; bucket RESET_GPU; differs in layer):" in text
    assert "| 2 | node_reboot | critical |" in text
