"""The driver role's package decisions come from the driver_plan filter, not from Jinja: the installed
version read from package_facts, and the package names apt and dnf install."""

from ansible_collections.gpufleet.core.plugins.filter.driver_plan import driver_plan as driver_plan_filter
from ansible_collections.gpufleet.core.plugins.plugin_utils.rollout import plan as D
from tests.support.driver_plan_builders import PACKAGE, facts, policy


def host_plan(**inputs):
    data = {"mode": "rollout", "policy": policy(pin="550.127.05"), "facts": facts(), "record": {}}
    data.update(inputs)
    return driver_plan_filter(data, "host")


def test_installed_version_is_read_from_package_facts():
    rpm = {PACKAGE: [{"version": "550.90.07", "release": "1.el9", "source": "rpm"}]}
    plan = host_plan(packages=rpm)
    assert (plan["installed_package"], plan["installed"], plan["action"]) == ("550.90.07-1.el9", "550.90.07", "install")
    assert host_plan(packages={"other": [{"version": "1"}]})["installed_package"] is None


def test_an_explicit_installed_version_wins_over_package_facts():
    plan = host_plan(installed="550.127.05-1", packages={PACKAGE: [{"version": "550.90.07-1"}]})
    assert (plan["installed_package"], plan["action"]) == ("550.127.05-1", "restart")  # the loaded module is 550.90.07


def test_install_names_follow_the_target_or_the_exact_package_version():
    assert host_plan(packages={})["install_names"] == {"apt": PACKAGE + "=550.127.05*", "dnf": PACKAGE + "-550.127.05"}
    assert host_plan(packages={}, package_version="550.127.05-0ubuntu1")["install_names"] == {
        "apt": PACKAGE + "=550.127.05-0ubuntu1", "dnf": PACKAGE + "-550.127.05-0ubuntu1"}
    assert host_plan(packages={}, package_version="")["install_names"]["apt"] == PACKAGE + "=550.127.05*"


def test_no_install_names_without_a_package_or_a_target():
    assert D.install_names("", "550.127.05") is None
    assert D.install_names(PACKAGE, None) is None
