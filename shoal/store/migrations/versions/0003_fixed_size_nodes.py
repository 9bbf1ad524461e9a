"""Seed 003's fixed-size virtual nodes: a virtual cluster's groups of fixed-size nodes, as
JSON (`[{"policy": "PACK", "nodes": [{"resources": {...}, "labels": {...}}]}]`). Existing
virtual clusters get none (`min` and `max` are their flexible minimum and maximum).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.add_column(sa.Column("fixed_size_nodes", sa.JSON(), nullable=False,
                                   server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.drop_column("fixed_size_nodes")
