"""The live control plane: the wall-clock driver of the scheduling core.

`ControlPlane` owns the loop that turns the store's jobs into running processes: it keeps one
`SchedulerModel`, runs the profile's cycle over it, persists each cycle's binds before
launching anything, launches through the executor, watches the processes and records how they
end. It is the live twin of `shoal.sim.simulator`. It owns no HTTP: the API calls `submit`,
`cancel` and reads `pending_reason`.
"""

from shoal.control.loop import ControlPlane
from shoal.control.records import MasterPorts

__all__ = ["ControlPlane", "MasterPorts"]
