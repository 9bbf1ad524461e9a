"""Usage accounting (issue 21): every ended task attempt's resource-seconds, summed by hour
(`usage_hours`), by day (`usage_days`) and by 30-day period (`usage_periods`) per queue,
user, GPU type, node and outcome, and
each attempt kept on its own for a while (`usage_attempts`, what a report by job reads).

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

NAME = 253
HISTORY_SUFFIX = 20


def _bucket(table: str, period: str) -> None:
    op.create_table(
        table,
        sa.Column(period, sa.BigInteger(), nullable=False),
        sa.Column("queue", sa.String(NAME), nullable=False),
        sa.Column("user", sa.String(NAME), nullable=False),
        sa.Column("gpu_type", sa.String(NAME), nullable=False),
        sa.Column("node", sa.String(NAME), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("tasks", sa.Integer(), nullable=False),
        sa.Column("gpu_seconds", sa.Double(), nullable=False),
        sa.Column("cpu_seconds", sa.Double(), nullable=False),
        sa.Column("memory_byte_seconds", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint(period, "queue", "user", "gpu_type", "node", "outcome",
                                name=f"pk_{table}"),
        sqlite_with_rowid=False,
    )


def upgrade() -> None:
    _bucket("usage_hours", "hour")
    _bucket("usage_days", "day")
    _bucket("usage_periods", "period")
    op.create_table(
        "usage_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("job", sa.String(NAME + HISTORY_SUFFIX), nullable=False),
        sa.Column("task", sa.String(600), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("queue", sa.String(NAME), nullable=False),
        sa.Column("user", sa.String(NAME), nullable=False),
        sa.Column("gpu_type", sa.String(NAME), nullable=False),
        sa.Column("node", sa.String(NAME), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("started", sa.Double(), nullable=False),
        sa.Column("ended", sa.Double(), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("cpu_millis", sa.BigInteger(), nullable=False),
        sa.Column("memory_mib", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_usage_attempts"),
    )
    op.create_index("ix_usage_attempts_ended", "usage_attempts", ["ended"])


def downgrade() -> None:
    op.drop_index("ix_usage_attempts_ended", table_name="usage_attempts")
    op.drop_table("usage_attempts")
    op.drop_table("usage_periods")
    op.drop_table("usage_days")
    op.drop_table("usage_hours")
