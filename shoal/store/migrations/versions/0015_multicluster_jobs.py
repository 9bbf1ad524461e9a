"""Issue 19's durable dispatcher (seed 000): multi-cluster jobs, their copies on each member
per dispatch round, and their secrets, sealed. New tables only: nothing that exists changes.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

NAME = 253


def upgrade() -> None:
    op.create_table(
        "mc_jobs",
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("owner", sa.String(NAME), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.Column("policy", sa.String(32), nullable=False),
        sa.Column("guard_time_s", sa.Double(), nullable=False),
        sa.Column("time_scale_s", sa.Double(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("kept", sa.String(NAME), nullable=True),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("submitted", sa.Double(), nullable=False),
        sa.Column("updated", sa.Double(), nullable=False),
        sa.Column("ended", sa.Double(), nullable=True),
        sa.Column("stop_requested", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_mc_jobs")),
    )
    op.create_index(op.f("ix_mc_jobs_owner"), "mc_jobs", ["owner"])
    op.create_index(op.f("ix_mc_jobs_state"), "mc_jobs", ["state"])
    op.create_table(
        "mc_copies",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job", sa.String(NAME), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("alias", sa.String(NAME), nullable=False),
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("remote_id", sa.String(NAME), nullable=True),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("member_state", sa.String(64), nullable=False),
        sa.Column("lost", sa.Boolean(), nullable=False),
        sa.Column("intended_at", sa.Double(), nullable=False),
        sa.Column("submitted_at", sa.Double(), nullable=True),
        sa.Column("running_since", sa.Double(), nullable=True),
        sa.Column("ended_at", sa.Double(), nullable=True),
        sa.Column("verdict", sa.String(16), nullable=True),
        sa.Column("verdict_reason", sa.Text(), nullable=False),
        sa.Column("cancel_requested_at", sa.Double(), nullable=True),
        sa.Column("cancels_issued", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["job"], ["mc_jobs.name"],
                                name=op.f("fk_mc_copies_job_mc_jobs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mc_copies")),
        sa.UniqueConstraint("job", "round", "alias", name=op.f("uq_mc_copies_job_round_alias")),
    )
    op.create_index(op.f("ix_mc_copies_job"), "mc_copies", ["job"])
    op.create_table(
        "mc_secrets",
        sa.Column("job", sa.String(NAME), nullable=False),
        sa.Column("sealed", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["job"], ["mc_jobs.name"],
                                name=op.f("fk_mc_secrets_job_mc_jobs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job", name=op.f("pk_mc_secrets")),
    )


def downgrade() -> None:
    op.drop_table("mc_secrets")
    op.drop_index(op.f("ix_mc_copies_job"), table_name="mc_copies")
    op.drop_table("mc_copies")
    op.drop_index(op.f("ix_mc_jobs_state"), table_name="mc_jobs")
    op.drop_index(op.f("ix_mc_jobs_owner"), table_name="mc_jobs")
    op.drop_table("mc_jobs")
