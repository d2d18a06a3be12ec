# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Alembic's environment for the run store: always online, on the connection store/schema.py hands over
(config.attributes["connection"]), inside that connection's transaction. No alembic.ini is needed."""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


from alembic import context

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=None, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
