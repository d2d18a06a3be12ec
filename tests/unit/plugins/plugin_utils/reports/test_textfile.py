"""gpufleet.prom published into node_exporter's textfile directory (issue 30, section 1): atomically, mode 0644,
only by a complete audit of the whole scope; a directory that does not exist is refused, never created."""

import os
import stat

import pytest

from ansible_collections.gpufleet.core.plugins.plugin_utils.reports.textfile import publish_textfile, textfile_line

FLEET_SERIES = "gpufleet_audit_hosts{status=\"ok\"} 18\n"
NEW_SERIES = "gpufleet_audit_hosts{status=\"ok\"} 17\n"


def report(status="complete", reason="every host of the pattern was targeted"):
    return {"run": {"status": status, "status_reason": reason}}


@pytest.fixture()
def folders(tmp_path):
    run_dir, textfile_dir = tmp_path / "run", tmp_path / "textfile"
    run_dir.mkdir()
    textfile_dir.mkdir()
    (run_dir / "gpufleet.prom").write_text(NEW_SERIES)
    (textfile_dir / "gpufleet.prom").write_text(FLEET_SERIES)
    return run_dir, textfile_dir


def test_a_complete_audit_replaces_the_file_atomically_with_mode_0644(folders):
    run_dir, textfile_dir = folders
    os.umask(0o077)  # the mode is 0644 whatever the umask: node_exporter runs as another user
    try:
        published = publish_textfile(report(), str(run_dir), str(textfile_dir))
    finally:
        os.umask(0o022)
    target = textfile_dir / "gpufleet.prom"
    assert published == {"path": str(target), "written": True, "reason": "a complete audit of the whole scope"}
    assert target.read_text() == NEW_SERIES
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(os.listdir(textfile_dir)) == ["gpufleet.prom"]  # no temporary file left beside it
    assert textfile_line(published) == "Textfile: %s replaced (a complete audit of the whole scope)" % target


@pytest.mark.parametrize("run, kind, why", [
    (report("partial", "17 of the pattern's 18 hosts were not targeted (--limit a)"), "audit",
     "a partial run (--limit) never replaces it (17 of the pattern's 18 hosts were not targeted (--limit a))"),
    (report("failed", "no host was targeted"), "audit", "a failed run never replaces it (no host was targeted)"),
    (report(), "incident", "a run of kind incident never replaces it (only a complete audit of the whole scope does)"),
    (report(), "audit-loadstep-audit",
     "a run of kind audit-loadstep-audit never replaces it (only a complete audit of the whole scope does)"),
    (report(), "audit-after", "a run of kind audit-after never replaces it (only a complete audit of the whole scope does)"),
])
def test_other_runs_leave_the_fleets_file_as_it_is_and_say_why(folders, run, kind, why):
    run_dir, textfile_dir = folders
    published = publish_textfile(run, str(run_dir), str(textfile_dir), kind)
    assert published["written"] is False and published["reason"] == why
    assert (textfile_dir / "gpufleet.prom").read_text() == FLEET_SERIES
    assert "NOT replaced: " + why in textfile_line(published)


def test_a_directory_that_does_not_exist_is_refused_not_created(folders, tmp_path):
    run_dir, _textfile_dir = folders
    missing = tmp_path / "node-exporter-textfile"
    published = publish_textfile(report(), str(run_dir), str(missing))
    assert published["written"] is False
    assert published["reason"] == ("%s is not an existing directory (node_exporter's --collector.textfile.directory; "
                                   "it is never created)" % missing)
    assert not missing.exists()


def test_an_unwritable_directory_is_a_message_not_an_exception(folders):
    run_dir, textfile_dir = folders
    os.remove(run_dir / "gpufleet.prom")  # nothing to copy: the reports could not be read back
    published = publish_textfile(report(), str(run_dir), str(textfile_dir))
    assert published["written"] is False and published["reason"].startswith("cannot write it: ")
    assert (textfile_dir / "gpufleet.prom").read_text() == FLEET_SERIES
