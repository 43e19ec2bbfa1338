"""sshd stand-in for the MPIJob workers: the MPI operator's launcher reaches them with `ssh HOST
CMD` (the ssh stand-in hands CMD to the simulator, which runs it in this pod); this only keeps
the pod running until it is stopped."""

import sys

import standin

if __name__ == "__main__":
    standin.record("sshd")
    standin.block()
    sys.exit(0)
