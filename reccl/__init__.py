"""ReCCL: a collective communication library that survives NIC and link failures.

    from reccl import Communicator
    comm = Communicator(rank, world_size, "10.0.0.1:29500", host="h1", nics=["10.1.0.1"])
    y = comm.all_reduce(x)          # NumPy array or CPU torch tensor
"""

from .communicator import CommOptions, Communicator
from .errors import ReCCLError
from .transport import Event, TransportOptions

__all__ = ["CommOptions", "Communicator", "Event", "ReCCLError", "TransportOptions"]
