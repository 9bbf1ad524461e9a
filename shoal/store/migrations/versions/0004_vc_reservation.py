"""Seed 003's atomic reservation: where a virtual cluster's fixed-size nodes are carved
(`[{"node": "n1", "gpus": [0, 1]}, ...]`, NULL while they are not), and when the virtual
cluster was created (queued reservations are carved in that order). Existing virtual
clusters get no carving (the scheduler carves them) and creation time 0, so they keep their
name order among themselves and come before any created later. And a job's own virtual
cluster (`spec.virtualCluster`), with its carving; existing jobs have none. And how long a
virtual cluster keeps its idle flexible resources (`flexibleIdleTimeout`; existing: 0).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.add_column(sa.Column("reservation", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("created", sa.Double(), nullable=False,
                                   server_default="0"))
        batch.add_column(sa.Column("idle_timeout", sa.Double(), nullable=False,
                                   server_default="0"))
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("virtual_cluster", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("virtual_cluster")
    with op.batch_alter_table("virtual_clusters") as batch:
        batch.drop_column("idle_timeout")
        batch.drop_column("created")
        batch.drop_column("reservation")
