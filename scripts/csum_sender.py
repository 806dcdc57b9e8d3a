#!/usr/bin/env python3
"""csum_sender.py RATE - send TCP SYNs with a corrupted checksum from
192.0.2.1 to 192.0.2.2:9 at RATE per second, forever.

Run inside the sending network namespace of a pair that `make demo` and
bench/time_to_page.py build (ip netns exec A python3 csum_sender.py 20);
the receiving namespace's kernel counts each as Tcp InCsumErrors.  Prints
"first <unix time>" when the first segment leaves.  Raw sockets: root.
"""
import socket
import struct
import sys
import time


def main():
    rate = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
    src, dst = socket.inet_aton("192.0.2.1"), socket.inet_aton("192.0.2.2")
    start = time.time()
    print("first %.6f" % start, flush=True)
    n = 0
    while True:
        n += 1
        ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 40, n & 0xffff, 0, 64, 6, 0, src, dst)
        # a SYN whose checksum (0xdead) is wrong on purpose
        tcp = struct.pack("!HHIIBBHHH", 40000 + n % 1000, 9, n, 0, 5 << 4, 0x02, 1024,
                          0xdead, 0)
        s.sendto(ip + tcp, ("192.0.2.2", 0))
        time.sleep(max(0.0, start + n / rate - time.time()))


if __name__ == "__main__":
    main()
