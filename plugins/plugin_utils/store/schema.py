# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The store's schema revision: a new store is created at the newest revision, an older one upgrades
(Alembic, store/migrations), one newer than this code is refused."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import contextlib
import fcntl
import os

from ansible_collections.gpufleet.core.plugins.plugin_utils.store.engine import StoreError
from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import inspect, text

MIGRATIONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")
# The revisions in migrations/versions, oldest first (a test checks them against Alembic's own view). An
# audit reads the store's revision with one query and loads Alembic only when the store must change.
REVISIONS = ("0001", "0002", "0003", "0005")
HEAD = REVISIONS[-1]


def alembic_config(connection=None):
    from alembic.config import Config  # here, not on top: Alembic loads only when the schema must change
    config = Config()
    config.set_main_option("script_location", MIGRATIONS)
    config.attributes["connection"] = connection
    return config


def script_directory():
    from alembic.script import ScriptDirectory  # here: as alembic_config
    return ScriptDirectory.from_config(alembic_config())


def head_revision():
    return script_directory().get_current_head()


def known_revisions():
    return [script.revision for script in script_directory().walk_revisions()]


def current_revision(connection):
    """The store's revision, or None for an empty database."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def refuse_newer(revision):
    if revision is not None and revision not in REVISIONS:
        raise StoreError(
            "the store is at schema revision %s, newer than this gpufleet knows (its revisions: %s, newest %s); "
            "upgrade gpufleet on this controller, or point it at another store" % (
                revision, ", ".join(REVISIONS), HEAD))


def upgrade(connection, revision="head"):
    from alembic import command  # here: as alembic_config
    command.upgrade(alembic_config(connection), revision)


SCHEMA_LOCK = 0x6770666C  # "gpfl": the PostgreSQL advisory lock that one schema change at a time holds


def serialise_schema_changes(connection):
    """Several audits starting at once on a new PostgreSQL store (the slices of a sliced job) create its
    schema one after the other: each waits for the lock, held until its transaction ends. (SQLite:
    sqlite_folder_locked.)"""
    if connection.dialect.name == "postgresql":
        connection.execute(text("SELECT pg_advisory_xact_lock(%d)" % SCHEMA_LOCK))


@contextlib.contextmanager
def sqlite_folder_locked(engine):
    """For a SQLite file store: an exclusive lock on the folder that holds it, for the duration. The Python
    driver runs DDL outside a transaction, so several audits creating a new store at once would each find no
    tables and each create them; with the lock, the first creates the schema and the others find it. A lock
    on the folder, not on the database file: closing a descriptor of that file would drop SQLite's own locks."""
    database = engine.url.database if engine.url.get_backend_name() == "sqlite" else None
    if not database or database == ":memory:":
        yield
        return
    handle = os.open(os.path.dirname(os.path.abspath(database)), os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def ensure_schema(engine, revision="head"):
    """Create or upgrade the store to `revision` (head: this code's newest) in one transaction; refuse a
    store at a revision this code does not know. Returns the revision the store is at."""
    target = HEAD if revision == "head" else revision
    with sqlite_folder_locked(engine), engine.begin() as connection:
        serialise_schema_changes(connection)
        current = current_revision(connection)
        refuse_newer(current)
        if current != target:
            upgrade(connection, target)
    return target
