"""Completion policy and retries: a job's `minSucceeded`, `minFailed`, `jobRetryCount`, its
job retries so far and the stop under way (the state it ends in once its tasks have
stopped); a task's in-place retries. Existing rows get the defaults: all tasks must succeed,
one failure fails the job, no retries, no stop under way. (Per-group `taskRetryCount` and
`completion.minSucceeded` live in the task-group JSON of `jobs.spec`: absent keys read as
their defaults.)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("min_succeeded", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("min_failed", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("job_retry_count", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("retries", sa.Integer(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("stopping", sa.String(32), nullable=True))
        batch.add_column(sa.Column("stop_cause", sa.Text(), nullable=True))
    with op.batch_alter_table("tasks") as batch:
        batch.add_column(sa.Column("retries", sa.Integer(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("tasks") as batch:
        batch.drop_column("retries")
    with op.batch_alter_table("jobs") as batch:
        for column in ("stop_cause", "stopping", "retries", "job_retry_count", "min_failed",
                       "min_succeeded"):
            batch.drop_column(column)
