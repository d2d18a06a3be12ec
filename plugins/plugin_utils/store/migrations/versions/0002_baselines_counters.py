# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baselines (a known-good run per group) and the per-GPU error counters that trends read.

Revision ID: 0002
Revises: 0001
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # loaded only by Alembic (store/schema.py), which brings both
    sa = op = None

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def run_reference():
    return sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)


def upgrade():
    op.create_table(
        "baselines",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("scope_group", sa.String(255), nullable=False, unique=True),
        run_reference(),
        sa.Column("set_at", sa.String(32), nullable=False),
    )
    op.create_table(
        "gpu_counters",
        run_reference(),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("gpu_key", sa.String(128), nullable=False),
        sa.Column("observed_at", sa.String(32), nullable=False),
        sa.Column("ecc_corrected", sa.BigInteger),
        sa.Column("retired_pages", sa.BigInteger),
        sa.Column("remapped_rows", sa.BigInteger),
        sa.Column("pcie_replays", sa.BigInteger),
        sa.Column("nvlink_errors", sa.BigInteger),
    )
    op.create_index("ix_counters_gpu", "gpu_counters", ["gpu_key", "run_pk"])
    op.create_index("ix_counters_run", "gpu_counters", ["run_pk"])


def downgrade():
    op.drop_table("gpu_counters")
    op.drop_table("baselines")
