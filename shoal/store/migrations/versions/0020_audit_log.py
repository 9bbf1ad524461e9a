"""Admin changes and their audit log (issue 21): `audit_log` records who changed what, when
(`shoal.store.audit`); `nodes.draining` marks a node being drained (`shoal node drain`) and
`virtual_clusters.deleting` one closed to be deleted once its last job has ended
(`shoal vc delete --drain`), so that both survive a restart.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

NAME = 253
HISTORY_SUFFIX = 20


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("at", sa.Double(), nullable=False),
        sa.Column("actor", sa.String(NAME), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(NAME + HISTORY_SUFFIX), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False, server_default=""),
        sa.PrimaryKeyConstraint("id", name="pk_audit_log"),
    )
    op.create_index("ix_audit_log_actor_id", "audit_log", ["actor", "id"])
    op.create_index("ix_audit_log_action_id", "audit_log", ["action", "id"])
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("draining", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.add_column(sa.Column("deleting", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.drop_column("deleting")
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("draining")
    op.drop_index("ix_audit_log_action_id", table_name="audit_log")
    op.drop_index("ix_audit_log_actor_id", table_name="audit_log")
    op.drop_table("audit_log")
