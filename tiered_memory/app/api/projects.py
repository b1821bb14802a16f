"""Operations on mid-term projects (`mid-term/projects/{id}/`) and their tasks."""

from __future__ import annotations

__all__ = [
    "CancelRequest",
    "CompleteRequest",
    "Finished",
    "NewProjectRequest",
    "PROJECT_CANCEL",
    "PROJECT_COMPLETE",
    "PROJECT_LIST",
    "PROJECT_NEW",
    "PROJECT_SHOW",
    "PROJECT_UPDATE",
    "ProjectList",
    "ProjectListRequest",
    "ProjectRequest",
    "ProjectSummary",
    "ProjectUpdateRequest",
    "ProjectView",
    "TASK_ADD",
    "TASK_DONE",
    "TASK_LIST",
    "Task",
    "TaskAddRequest",
    "TaskDoneRequest",
    "TaskList",
    "TaskListRequest",
]

from dataclasses import dataclass, field
from datetime import datetime

from tiered_memory.app.api import Op
from tiered_memory.app.api.lifecycle import Moved
from tiered_memory.model.records import Record


@dataclass
class Task(Record):
    """One entry of a project's tasks.json. `id` is the number people type; `uid` is random and
    never reused, so the same task added on two machines merges as two tasks."""

    id: int | str | None
    text: str
    status: str = "open"
    created: str | None = None
    done: str | None = None
    uid: str | None = None


@dataclass
class ProjectView(Record):
    id: str
    title: str
    status: str
    archived: bool
    tags: list[str]
    path: str  # the project's folder
    created: datetime | None
    updated: datetime | None
    description: str
    tasks: list[Task] = field(default_factory=list)
    files: list[str] = field(default_factory=list)


@dataclass
class ProjectSummary(Record):
    id: str
    title: str
    status: str
    archived: bool
    path: str
    updated: datetime | None
    open_tasks: int = 0


@dataclass
class ProjectList(Record):
    projects: list[ProjectSummary] = field(default_factory=list)


@dataclass
class NewProjectRequest(Record):
    id: str
    title: str | None = None
    description: str | None = None
    tags: list[str] = field(default_factory=list)


@dataclass
class ProjectRequest(Record):
    id: str


@dataclass
class ProjectListRequest(Record):
    include_archived: bool = False


@dataclass
class ProjectUpdateRequest(Record):
    id: str
    title: str | None = None
    tags: list[str] | None = None  # replaces the tags; None leaves them
    note: str | None = None  # a dated line appended to the project's notes.md


@dataclass
class CompleteRequest(Record):
    id: str
    summary: str | None = None  # how it ended (kept in status.md)


@dataclass
class CancelRequest(Record):
    id: str
    reason: str | None = None  # kept in status.md


@dataclass
class Finished(Record):
    """A project completed or cancelled: its notes moved to long-term or the archive, one commit."""

    id: str
    status: str
    moves: list[Moved] = field(default_factory=list)
    commit: str | None = None


@dataclass
class TaskAddRequest(Record):
    project: str
    text: str


@dataclass
class TaskDoneRequest(Record):
    project: str
    task: int | str  # the number people type, or the task's uid (or a unique start of it)


@dataclass
class TaskListRequest(Record):
    project: str
    include_done: bool = False


@dataclass
class TaskList(Record):
    tasks: list[Task] = field(default_factory=list)


PROJECT_NEW = Op(
    "project_new", NewProjectRequest, ProjectView, runs="tiered_memory.app.projects:new", writes=True
)
PROJECT_SHOW = Op("project_show", ProjectRequest, ProjectView, runs="tiered_memory.app.projects:show")
PROJECT_LIST = Op(
    "project_list", ProjectListRequest, ProjectList, runs="tiered_memory.app.projects:list_projects"
)
PROJECT_UPDATE = Op(
    "project_update", ProjectUpdateRequest, ProjectView, runs="tiered_memory.app.projects:update", writes=True
)
PROJECT_COMPLETE = Op(
    "project_complete", CompleteRequest, Finished, runs="tiered_memory.app.projects:complete", writes=True
)
PROJECT_CANCEL = Op(
    "project_cancel", CancelRequest, Finished, runs="tiered_memory.app.projects:cancel", writes=True
)
TASK_ADD = Op("task_add", TaskAddRequest, Task, runs="tiered_memory.app.projects:add_task", writes=True)
TASK_DONE = Op("task_done", TaskDoneRequest, Task, runs="tiered_memory.app.projects:done_task", writes=True)
TASK_LIST = Op("task_list", TaskListRequest, TaskList, runs="tiered_memory.app.projects:list_tasks")
