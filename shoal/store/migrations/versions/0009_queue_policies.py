"""Issue 16's queue fields: a virtual cluster's `state`, `priority` and `queue_policy`
(preemption policies, borrowing and lending limits, as JSON; NULL: the defaults), a job's
`preemptable`, a priority class's `preemption_policy`. Existing rows get the defaults,
which keep what they did before. (Task groups' `minAvailable` and `minCount` live in the
groups' JSON, `jobs.spec`.)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.add_column(sa.Column("state", sa.String(16), nullable=False,
                                   server_default="Open"))
        batch.add_column(sa.Column("priority", sa.BigInteger(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("queue_policy", sa.JSON(), nullable=True))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("preemptable", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
    with op.batch_alter_table("priority_classes") as batch:
        batch.add_column(sa.Column("preemption_policy", sa.String(32), nullable=False,
                                   server_default="PreemptLowerPriority"))


def downgrade() -> None:
    with op.batch_alter_table("priority_classes") as batch:
        batch.drop_column("preemption_policy")
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("preemptable")
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.drop_column("queue_policy")
        batch.drop_column("priority")
        batch.drop_column("state")
