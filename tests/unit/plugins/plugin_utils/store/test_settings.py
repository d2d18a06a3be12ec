"""Which store a run uses: the inventory's URL, else GPUFLEET_STORE_URL, else SQLite under the report root."""

from ansible_collections.gpufleet.core.plugins.plugin_utils.policy import validate_policy
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import redacted
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.record import settings_for


def test_inventory_wins_over_environment_which_wins_over_the_default(tmp_path):
    environment = {"GPUFLEET_STORE_URL": "postgresql://env@db/gpufleet"}
    chosen = settings_for(str(tmp_path), "postgres://inv:secret@db/fleet", None, (), environment)
    assert (chosen.url, chosen.source) == ("postgresql+psycopg://inv:secret@db/fleet", "inventory (gpufleet_store_url)")
    chosen = settings_for(str(tmp_path), None, None, (), environment)
    assert (chosen.url, chosen.source) == ("postgresql+psycopg://env@db/gpufleet", "environment (GPUFLEET_STORE_URL)")
    chosen = settings_for(str(tmp_path), None, None, (), {})
    assert chosen.url == "sqlite:///%s" % (tmp_path / "gpufleet.sqlite")


def test_the_store_can_be_turned_off(tmp_path):
    assert settings_for(str(tmp_path), "sqlite:///x", False, (), {}).url is None
    assert settings_for(str(tmp_path), "sqlite:///x", "no", (), {}).url is None
    assert settings_for(str(tmp_path), None, None, (), {"GPUFLEET_STORE": "off"}).url is None
    assert settings_for(str(tmp_path), None, True, (), {"GPUFLEET_STORE": "1"}).url is not None


def test_retention_is_the_longest_any_policy_asks_for(tmp_path):
    short = validate_policy({"store": {"retention": {"facts_days": 7, "runs_days": 90}}})
    long = validate_policy({"store": {"retention": {"facts_days": 60, "runs_days": 0}}})
    chosen = settings_for(str(tmp_path), None, None, [short, long], {})
    assert (chosen.facts_days, chosen.runs_days) == (60, 0)
    default = settings_for(str(tmp_path), None, None, [validate_policy({})], {})
    assert (default.facts_days, default.runs_days) == (30, 365)


def test_groups_are_read_per_host(tmp_path):
    chosen = settings_for(str(tmp_path), None, None, (), {}, groups={"all": ["a", "b"], "h100": ["a"]})
    assert chosen.groups_of_host == {"a": ["all", "h100"], "b": ["all"]}


def test_passwords_never_show():
    assert redacted("postgresql+psycopg://gpufleet:hunter2@db:5432/store") == "postgresql+psycopg://gpufleet:***@db:5432/store"
