# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HCA ports' cumulative counters per run (issue 32), which hardware.fabric_counter_growth compares with the
previous run: one row per port, its counters as a JSON object.

Revision ID: 0006
Revises: 0005
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # loaded only by Alembic (store/schema.py), which brings both
    sa = op = None

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        "hca_counters",
        sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("hca", sa.String(64), nullable=False),
        sa.Column("port", sa.Integer, nullable=False),
        sa.Column("observed_at", sa.String(32), nullable=False),
        sa.Column("counters", sa.Text, nullable=False),
    )
    op.create_index("ix_hca_counters_run", "hca_counters", ["run_pk"])


def downgrade():
    op.drop_table("hca_counters")
