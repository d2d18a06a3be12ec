# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the store is and how to open it.

Which store a run uses (docs/store.md): the inventory variable gpufleet_store_url wins, then the
environment variable GPUFLEET_STORE_URL, then the embedded default, a SQLite file
<report root>/gpufleet.sqlite created on first use. gpufleet_store: false (or GPUFLEET_STORE=off) turns
the store off.
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

import os

ENV_URL = "GPUFLEET_STORE_URL"
ENV_SWITCH = "GPUFLEET_STORE"
SQLITE_NAME = "gpufleet.sqlite"
OFF_WORDS = ("0", "false", "no", "off", "none", "disabled")
SQLITE_BUSY_SECONDS = 60


class StoreError(Exception):
    """The store could not be opened, migrated, read or written; the message says why."""


def default_url(report_root):
    return "sqlite:///%s" % os.path.join(os.path.abspath(report_root), SQLITE_NAME)


def driver_url(url):
    """postgresql:// and postgres:// mean psycopg 3 (SQLAlchemy's own default would be psycopg2)."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def switched_off(value):
    if value is None:
        return False
    if isinstance(value, bool):
        return not value
    return str(value).strip().lower() in OFF_WORDS


def resolve_url(report_root, inventory_url=None, enabled=None, environ=None):
    """(url or None when the store is off, where the url came from)."""
    environ = os.environ if environ is None else environ
    if switched_off(enabled) or switched_off(environ.get(ENV_SWITCH)):
        return None, "off"
    if inventory_url:
        return driver_url(str(inventory_url)), "inventory (gpufleet_store_url)"
    if environ.get(ENV_URL):
        return driver_url(environ[ENV_URL]), "environment (%s)" % ENV_URL
    return default_url(report_root), "default (SQLite under the report root)"


def redacted(url):
    """The url without its password, for messages and reports."""
    try:
        from sqlalchemy.engine import make_url  # here: see make_engine
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable url: show only its scheme
        return str(url).split(":", 1)[0] + ":..."


def _sqlite_pragmas(dbapi_connection, _record):
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def make_engine(url):
    """A SQLAlchemy engine; a SQLite file's folder is created, the file itself on first connection."""
    # SQLAlchemy is imported here, not on top: the playbooks' settings check (playbook_settings.py) imports this
    # module to name a store without opening it; SQLAlchemy loads only when one is opened.
    from ansible_collections.gpufleet.core.plugins.plugin_utils.store.sqla import (
        IMPORT_ERROR, MISSING, create_engine, event, make_url)
    if IMPORT_ERROR is not None:
        raise StoreError(MISSING % IMPORT_ERROR)
    try:
        parsed = make_url(url)
    except Exception as exc:
        raise StoreError("store url %s is not a database url: %s" % (redacted(url), exc))
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            try:
                os.makedirs(os.path.dirname(os.path.abspath(parsed.database)), exist_ok=True)
            except OSError as exc:
                raise StoreError("cannot create the store's folder: %s" % exc)
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_SECONDS})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    connect_args = {"connect_timeout": 10} if parsed.get_backend_name() == "postgresql" else {}
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True)
