"""Reusable job names (issue 20): a name whose job has ended may be submitted again; the
ended job stays in history as `NAME.N` (`shoal.store.job_names`), which may be longer than a
job name, so `jobs.name` widens by HISTORY_SUFFIX characters. `jobs.files_of` marks a job
just moved into history whose engine files (logs, attempts' records) still sit under its
old name: the control loop moves them before the new job of that name can start.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

NAME = 253
HISTORY_SUFFIX = 20


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.alter_column("name", existing_type=sa.String(NAME),
                           type_=sa.String(NAME + HISTORY_SUFFIX), existing_nullable=False)
        batch.add_column(sa.Column("files_of", sa.String(NAME), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("files_of")
        batch.alter_column("name", existing_type=sa.String(NAME + HISTORY_SUFFIX),
                           type_=sa.String(NAME), existing_nullable=False)
