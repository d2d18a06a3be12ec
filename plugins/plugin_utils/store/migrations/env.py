# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Alembic's environment for the run store: always online, on the connection store/schema.py hands over
(config.attributes["connection"]), inside that connection's transaction. No alembic.ini is needed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type

try:
    from alembic import context
except ImportError:  # loaded only by Alembic (store/schema.py)
    context = None


def run_migrations(migration_context):
    connection = migration_context.config.attributes["connection"]
    migration_context.configure(connection=connection, target_metadata=None, render_as_batch=True)
    with migration_context.begin_transaction():
        migration_context.run_migrations()


if context is not None and getattr(context, "config", None) is not None:
    run_migrations(context)
