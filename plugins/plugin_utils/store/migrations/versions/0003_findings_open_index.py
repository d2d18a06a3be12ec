# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A covering index for "what changed since the previous run": every audit reads the previous run's
findings' identity, host, first_seen and runs_open, which this index answers without the table's rows
(their JSON documents). It starts with run_pk, so it replaces ix_findings_run.

Revision ID: 0003
Revises: 0002
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


try:
    from alembic import op
except ImportError:  # loaded only by Alembic (store/schema.py), which brings it
    op = None

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = ["run_pk", "identity", "host", "first_seen", "runs_open"]


def upgrade():
    op.create_index("ix_findings_open", "findings", COLUMNS)
    op.drop_index("ix_findings_run", table_name="findings")


def downgrade():
    op.create_index("ix_findings_run", "findings", ["run_pk"])
    op.drop_index("ix_findings_open", table_name="findings")
