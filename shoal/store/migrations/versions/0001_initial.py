"""The initial schema: jobs, tasks, events, nodes, virtual clusters, priority classes, users
and tokens (written by hand to match shoal/store/models.py; a test compares the two).

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

NAME = 253


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("user", sa.String(NAME), nullable=True),
        sa.Column("queue", sa.String(NAME), nullable=False),
        sa.Column("priority_class", sa.String(NAME), nullable=True),
        sa.Column("scheduler_name", sa.String(64), nullable=False),
        sa.Column("min_available", sa.Integer(), nullable=True),
        sa.Column("min_resources", sa.JSON(), nullable=True),
        sa.Column("spec", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("submitted", sa.Double(), nullable=False),
        sa.Column("runtime_estimate", sa.Double(), nullable=True),
        sa.Column("attained_gpu_seconds", sa.Double(), nullable=False),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("created", sa.Double(), nullable=False),
        sa.Column("updated", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
        sa.UniqueConstraint("name", name="uq_jobs_name"),
        sa.UniqueConstraint("idempotency_key", name="uq_jobs_idempotency_key"),
    )
    op.create_index("ix_jobs_submitted_name", "jobs", ["submitted", "name"])
    op.create_index("ix_jobs_state", "jobs", ["state"])

    op.create_table(
        "tasks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("group_name", sa.String(NAME), nullable=False),
        sa.Column("task_index", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(32), nullable=False),
        sa.Column("node", sa.String(NAME), nullable=True),
        sa.Column("gpus", sa.JSON(), nullable=False),
        sa.Column("started", sa.Double(), nullable=True),
        sa.Column("pid", sa.Integer(), nullable=True),
        sa.Column("pid_start_time", sa.Double(), nullable=True),
        sa.Column("exit_code", sa.Integer(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_tasks_job_id_jobs",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_tasks"),
        sa.UniqueConstraint("job_id", "group_name", "task_index",
                            name="uq_tasks_job_id_group_name_task_index"),
    )

    op.create_table(
        "events",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("task", sa.String(600), nullable=True),
        sa.Column("time", sa.Double(), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("source_state", sa.String(32), nullable=True),
        sa.Column("target_state", sa.String(32), nullable=True),
        sa.Column("cause", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"], name="fk_events_job_id_jobs",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_events"),
    )
    op.create_index("ix_events_job_id", "events", ["job_id"])

    op.create_table(
        "nodes",
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("capacity", sa.JSON(), nullable=False),
        sa.Column("allocatable", sa.JSON(), nullable=True),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("schedulable", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_nodes"),
    )

    op.create_table(
        "virtual_clusters",
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("parent", sa.String(NAME), nullable=False),
        sa.Column("min", sa.JSON(), nullable=False),
        sa.Column("max", sa.JSON(), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.Column("queueing", sa.String(32), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_virtual_clusters"),
    )

    op.create_table(
        "priority_classes",
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("global_default", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_priority_classes"),
    )

    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(NAME), nullable=False),
        sa.Column("admin", sa.Boolean(), nullable=False),
        sa.Column("queues", sa.JSON(), nullable=False),
        sa.Column("created", sa.Double(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("name", name="uq_users_name"),
    )

    op.create_table(
        "tokens",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("created", sa.Double(), nullable=False),
        sa.Column("last_used", sa.Double(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name="fk_tokens_user_id_users",
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name="pk_tokens"),
        sa.UniqueConstraint("token_hash", name="uq_tokens_token_hash"),
    )
    op.create_index("ix_tokens_user_id", "tokens", ["user_id"])


def downgrade() -> None:
    op.drop_index("ix_tokens_user_id", table_name="tokens")
    op.drop_table("tokens")
    op.drop_table("users")
    op.drop_table("priority_classes")
    op.drop_table("virtual_clusters")
    op.drop_table("nodes")
    op.drop_index("ix_events_job_id", table_name="events")
    op.drop_table("events")
    op.drop_table("tasks")
    op.drop_index("ix_jobs_state", table_name="jobs")
    op.drop_index("ix_jobs_submitted_name", table_name="jobs")
    op.drop_table("jobs")
