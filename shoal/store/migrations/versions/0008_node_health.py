"""A node's health as its engine reports it (a live inventory: Ray's nodes join, die and
come back): `nodes.ready` (true for existing nodes) and `nodes.reason`, why it is not ready
(empty). `nodes.schedulable` stays what was declared.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.add_column(sa.Column("ready", sa.Boolean(), nullable=False,
                                   server_default=sa.true()))
        batch.add_column(sa.Column("reason", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("nodes") as batch:
        batch.drop_column("reason")
        batch.drop_column("ready")
