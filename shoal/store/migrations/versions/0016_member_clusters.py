"""Issue 19's member clusters declared through the API (admins), beside the clusters file's:
one new table, each token sealed with the server's key. Nothing that exists changes.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

NAME = 253


def upgrade() -> None:
    op.create_table(
        "mc_clusters",
        sa.Column("alias", sa.String(NAME), nullable=False),
        sa.Column("uri", sa.Text(), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("gpu_type", sa.String(63), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("user", sa.String(255), nullable=True),
        sa.Column("sealed_token", sa.Text(), nullable=True),
        sa.Column("created", sa.Double(), nullable=False),
        sa.Column("updated", sa.Double(), nullable=False),
        sa.Column("updated_by", sa.String(NAME), nullable=False),
        sa.PrimaryKeyConstraint("alias", name=op.f("pk_mc_clusters")),
    )


def downgrade() -> None:
    op.drop_table("mc_clusters")
