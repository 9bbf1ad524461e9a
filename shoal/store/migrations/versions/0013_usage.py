"""Issue 17's fairness across users: a virtual cluster's `max_per_user` (JSON, only the
limited dimensions; existing rows get `{}`, no per-user limit, which keeps what they did
before) and the `usage` table, the control plane's decayed usage per (virtual cluster, user)
(`shoal.core.usage`), empty at first.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.add_column(sa.Column("max_per_user", sa.JSON(), nullable=False,
                                   server_default="{}"))
    op.create_table(
        "usage",
        sa.Column("vc", sa.String(253), primary_key=True),
        sa.Column("user", sa.String(253), primary_key=True),
        sa.Column("gpu_seconds", sa.Double(), nullable=False),
        sa.Column("cpu_seconds", sa.Double(), nullable=False),
        sa.Column("memory_seconds", sa.Double(), nullable=False),
        sa.Column("at", sa.Double(), nullable=False),
        sa.Column("half_life", sa.Double(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("usage")
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.drop_column("max_per_user")
