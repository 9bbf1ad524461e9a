"""Issue 20's job fields: a job's user annotations and labels, its time limit, the jobs it
depends on (afterok), whether it is held; and `job_originals`, the document an imported job
was converted from. Existing rows have none of them and are not held, which keeps what they
did before.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("annotations", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("labels", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("time_limit", sa.Double(), nullable=True))
        batch.add_column(sa.Column("depends_on", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("held", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    op.create_table(
        "job_originals",
        sa.Column("job_id", sa.Integer(), sa.ForeignKey("jobs.id", ondelete="CASCADE"),
                  primary_key=True),
        sa.Column("format", sa.String(64), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False))


def downgrade() -> None:
    op.drop_table("job_originals")
    with op.batch_alter_table("jobs") as batch:
        for column in ("held", "depends_on", "time_limit", "labels", "annotations"):
            batch.drop_column(column)
