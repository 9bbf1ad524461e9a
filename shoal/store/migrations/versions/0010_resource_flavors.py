"""Issue 16's resource flavors: a `resource_flavors` table (name, node labels as JSON). A
virtual cluster's quota per flavor and its fungibility live in its `queue_policy` JSON
(keys `flavors`, `flavorFungibility`); rows without them read as no flavors.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "resource_flavors",
        sa.Column("name", sa.String(253), primary_key=True),
        sa.Column("node_labels", sa.JSON(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("resource_flavors")
