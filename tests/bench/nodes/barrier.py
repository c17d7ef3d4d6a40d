#!/usr/bin/env python3
"""barrier.py: the bench's barrier across nodes: every node waits until all N have come, over TCP to node 1.

Usage: barrier.py NODE N PORT [HOST]   (node 1 listens on PORT; the others connect to HOST:PORT, retrying)
Node 1 answers every node once all N - 1 others are connected, so every node leaves
within a round trip of the others: the parts after it start together.
"""
import socket
import sys
import time


def main():
    node, n, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    host = sys.argv[4] if len(sys.argv) > 4 else "198.18.0.1"
    deadline = time.monotonic() + 600
    if node == 1:
        with socket.create_server(("", port), reuse_port=True) as srv:
            srv.settimeout(600)
            peers = [srv.accept()[0] for _ in range(n - 1)]
            for p in peers:
                p.sendall(b"g")
                p.close()
        return 0
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as s:
                s.settimeout(600)
                return 0 if s.recv(1) == b"g" else 1
        except (ConnectionRefusedError, socket.timeout):
            if time.monotonic() > deadline:
                print("barrier: node 1 never answered on port %d" % port, file=sys.stderr)
                return 1
            time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
