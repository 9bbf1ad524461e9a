"""Job tokens: a token issued for the tasks of one job (`tokens.job`), revoked when the job
ends. Existing tokens are users' (NULL). A job's sub-clusters live in its `virtual_cluster`
JSON (`subClusters`), which needs no schema change.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.add_column(sa.Column("job", sa.String(253), nullable=True))
        batch.create_index("ix_tokens_job", ["job"])


def downgrade() -> None:
    with op.batch_alter_table("tokens") as batch:
        batch.drop_index("ix_tokens_job")
        batch.drop_column("job")
