"""Deleting and expiring jobs, idempotency keys per user.

- `jobs.ended`: when a job reached its terminal state (what `shoal up --job-ttl` counts
  from), indexed; filled from `updated` for the jobs that had ended already.
- `jobs.delete_requested`: a `DELETE` arrived while the job ran; it is removed once its
  tasks have stopped. False for existing jobs.
- The idempotency key is unique per user (`uq_jobs_user_idempotency_key`), no longer across
  users: the same key from another user is another key.
- `ix_tasks_job_id_group_name_state`: the counts of a job's tasks per state that job
  summaries carry are read from this index alone (3x faster for a page of large jobs).
- `ix_jobs_state_submitted_name` replaces `ix_jobs_state`: a page of jobs in one state is
  an index range scan (20,000 jobs: 39 ms → 7 ms), and unfinished jobs are still found by it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_TERMINAL = ("Succeeded", "Failed", "Cancelled")


def upgrade() -> None:
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("ended", sa.Double(), nullable=True))
        batch.add_column(sa.Column("delete_requested", sa.Boolean(), nullable=False,
                                   server_default=sa.false()))
        batch.drop_constraint("uq_jobs_idempotency_key", type_="unique")
        batch.create_unique_constraint("uq_jobs_user_idempotency_key",
                                       ["user", "idempotency_key"])
        batch.create_index("ix_jobs_ended", ["ended"])
    op.create_index("ix_tasks_job_id_group_name_state", "tasks",
                    ["job_id", "group_name", "state"])
    op.drop_index("ix_jobs_state", "jobs")
    op.create_index("ix_jobs_state_submitted_name", "jobs", ["state", "submitted", "name"])
    jobs = sa.table("jobs", sa.column("ended", sa.Double()), sa.column("updated", sa.Double()),
                    sa.column("state", sa.String()))
    op.execute(jobs.update().where(jobs.c.state.in_(_TERMINAL))
               .values(ended=jobs.c.updated))


def downgrade() -> None:
    op.drop_index("ix_tasks_job_id_group_name_state", "tasks")
    op.drop_index("ix_jobs_state_submitted_name", "jobs")
    op.create_index("ix_jobs_state", "jobs", ["state"])
    with op.batch_alter_table("jobs") as batch:
        batch.drop_index("ix_jobs_ended")
        batch.drop_constraint("uq_jobs_user_idempotency_key", type_="unique")
        batch.create_unique_constraint("uq_jobs_idempotency_key", ["idempotency_key"])
        batch.drop_column("delete_requested")
        batch.drop_column("ended")
