"""benchlib.py - what the benchmarks share."""
import random
import socket


def _bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port(also=()):
    """A TCP port on 127.0.0.1 that nothing listens on, and port + d free too
    for each d in also (a Redis Cluster node's bus port is port + 10000)."""
    if not also:
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        return port
    while True:
        p = random.randint(20000, 65535 - max(also))
        if _bindable(p) and all(_bindable(p + d) for d in also):
            return p
