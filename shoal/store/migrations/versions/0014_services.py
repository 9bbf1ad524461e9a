"""Issue 17's services (seed 002): a job's `service` settings (JSON: task group, quiet
windows, hand-back; NULL: a training job) and a node's `reserved` resources, used outside
Shoal (JSON; NULL: none). Existing rows are training jobs and nodes with nothing reserved,
which keeps what they did before.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("service", sa.JSON(), nullable=True))
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("reserved", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("reserved")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("service")
