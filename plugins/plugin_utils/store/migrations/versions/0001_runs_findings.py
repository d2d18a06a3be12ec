# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpufleet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs, host statuses, facts, findings and causes.

Revision ID: 0001
Revises:
"""

from __future__ import absolute_import, division, print_function
__metaclass__ = type


try:
    import sqlalchemy as sa
    from alembic import op
except ImportError:  # loaded only by Alembic (store/schema.py), which brings both
    sa = op = None

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def run_reference():
    return sa.Column("run_pk", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False)


def upgrade():
    op.create_table(
        "runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(255), nullable=False, unique=True),
        sa.Column("scope_key", sa.String(500), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("status_reason", sa.Text),
        sa.Column("started_at", sa.String(32)),
        sa.Column("finished_at", sa.String(32)),
        sa.Column("tool_version", sa.String(64)),
        sa.Column("report_version", sa.String(16)),
        sa.Column("run_dir", sa.Text),
        sa.Column("hosts_total", sa.Integer, nullable=False),
        sa.Column("findings_total", sa.Integer, nullable=False),
        sa.Column("record", sa.Text, nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
    )
    op.create_index("ix_runs_scope_status", "runs", ["scope_key", "status", "id"])
    op.create_table(
        "hosts",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        run_reference(),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("message", sa.Text),
        sa.Column("facts_file", sa.Text),
    )
    op.create_index("ix_hosts_run", "hosts", ["run_pk"])
    op.create_index("ix_hosts_host", "hosts", ["host"])
    op.create_table(
        "facts",
        run_reference(),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("collected_at", sa.String(32)),
        sa.Column("data", sa.LargeBinary, nullable=False),
    )
    op.create_index("ix_facts_run_host", "facts", ["run_pk", "host"], unique=True)
    op.create_table(
        "findings",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        run_reference(),
        sa.Column("identity", sa.String(40), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("rule", sa.String(200), nullable=False),
        sa.Column("layer", sa.String(16), nullable=False),
        sa.Column("severity", sa.String(16), nullable=False),
        sa.Column("gpu", sa.String(64)),
        sa.Column("gpu_key", sa.String(128)),
        sa.Column("rule_key", sa.Text),
        sa.Column("first_seen", sa.String(32), nullable=False),
        sa.Column("runs_open", sa.Integer, nullable=False),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("ix_findings_run", "findings", ["run_pk"])
    op.create_index("ix_findings_identity", "findings", ["identity", "run_pk"])
    op.create_table(
        "causes",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        run_reference(),
        sa.Column("cause_id", sa.String(255), nullable=False),
        sa.Column("severity", sa.String(16)),
        sa.Column("data", sa.Text, nullable=False),
    )
    op.create_index("ix_causes_run", "causes", ["run_pk"])


def downgrade():
    for table in ("causes", "findings", "facts", "hosts", "runs"):
        op.drop_table(table)
