"""Elastic jobs (seed 001): a job's elasticity (`jobs.elastic`, JSON: its elastic task group,
min and max replicas, step rule and scale cooldown; NULL for a rigid job) and how long its
tasks are protected from preemption after they start (`jobs.protect_for`, seconds). Existing
jobs are rigid and unprotected.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("elastic", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("protect_for", sa.Double(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("protect_for")
        batch.drop_column("elastic")
