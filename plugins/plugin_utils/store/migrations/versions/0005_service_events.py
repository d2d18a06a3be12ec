# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service events of the nodes (issue 29): what quarantine and repair did to each node, from which its
service state is derived (quarantine/service_state.py).

Revision ID: 0005
Revises: 0003
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # loaded only by Alembic (store/schema.py), which brings both
    sa = op = None

revision = "0005"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "service_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("event", sa.String(32), nullable=False),
        sa.Column("at", sa.String(32), nullable=False),
        sa.Column("run_id", sa.String(255)),
        sa.Column("scheduler", sa.String(16), nullable=False),
        sa.Column("rule", sa.String(200)),
        sa.Column("finding", sa.Text),
        sa.Column("reason", sa.Text),
        sa.Column("step", sa.String(16)),
        sa.Column("result", sa.String(16)),
        sa.Column("detail", sa.Text),
    )
    op.create_index("ix_service_events_host", "service_events", ["host", "id"])


def downgrade():
    op.drop_table("service_events")
