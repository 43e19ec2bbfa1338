#!/usr/bin/env python3
"""A minimal ggml RPC client: connects to an RPC server (llama.cpp's ggml-rpc-server,
formerly rpc-server) the way llama-server's RPC backend does, then holds the
connection open until killed.

What llama-server does for each --rpc endpoint (llama.cpp b10359..b10470,
ggml/src/ggml-rpc/ggml-rpc.cpp): get_socket() connects and negotiate_hello()
sends HELLO; ggml_backend_rpc_get_device_count() sends DEVICE_COUNT; the device
queries then ask GET_DEVICE_MEMORY, GET_ALIGNMENT and GET_MAX_SIZE per device.
This client sends the same requests, prints one line starting with "connected"
once the server has answered them, and then blocks reading the socket.
(llama-server b10359 itself opens many such connections one after another while
it starts, each closed before the next, as get_socket() keeps only a weak_ptr;
21 with a 2-layer model in a test; the last one stays open while it serves.)

Wire format (little-endian, structs packed):
  request : | cmd: u8 | input_size: u64 | input |
  response: | size: u64 | data |
Commands (enum rpc_cmd): GET_ALIGNMENT=1, GET_MAX_SIZE=2, GET_DEVICE_MEMORY=11,
HELLO=14 (fixed forever by a static_assert), DEVICE_COUNT=15.
HELLO, protocol 4.x and later (RDMA negotiation, 2026-04):
  request  rpc_msg_hello_req { u8 conn_caps[24] }          (all zero: plain TCP)
  response rpc_msg_hello_rsp { u8 major, minor, patch, padding; u8 conn_caps[24] }
HELLO, protocol 3.x (2025-10 .. 2026-04): empty request, response { u8 major, minor, patch }.
DEVICE_COUNT and the u32 device field of the per-device requests exist since 3.0
(multi-device servers, 2025-10); 2.x servers are not supported.
The server accepts one client at a time and expects HELLO first, else it drops
the connection.

Exit codes: 0 killed by SIGTERM/SIGINT after "connected"; 1 connect failed;
2 a timeout before "connected" (e.g. the server is busy with another client:
the kernel completes the TCP handshake from the listen backlog, but nobody
answers HELLO); 3 the server closed the connection; 4 protocol mismatch.
Standard library only.
"""

from __future__ import annotations

import argparse
import signal
import socket
import struct
import sys
import time

RPC_CMD_GET_ALIGNMENT = 1
RPC_CMD_GET_MAX_SIZE = 2
RPC_CMD_GET_DEVICE_MEMORY = 11
RPC_CMD_HELLO = 14
RPC_CMD_DEVICE_COUNT = 15

RPC_CONN_CAPS_SIZE = 24


class ServerClosed(Exception):
    pass


class ProtocolError(Exception):
    pass


def recv_exact(sock: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ServerClosed(f"server closed the connection ({len(buf)} of {n} bytes read)")
        buf += chunk
    return bytes(buf)


def call(sock: socket.socket, cmd: int, payload: bytes, rsp_size: int) -> bytes:
    sock.sendall(struct.pack("<BQ", cmd, len(payload)) + payload)
    (size,) = struct.unpack("<Q", recv_exact(sock, 8))
    if size != rsp_size:
        raise ProtocolError(f"command {cmd}: response of {size} bytes, expected {rsp_size}")
    return recv_exact(sock, size)


def handshake(sock: socket.socket, proto_major: int) -> dict:
    if proto_major >= 4:
        rsp = call(sock, RPC_CMD_HELLO, bytes(RPC_CONN_CAPS_SIZE), 4 + RPC_CONN_CAPS_SIZE)
    else:
        rsp = call(sock, RPC_CMD_HELLO, b"", 3)
    major, minor, patch = rsp[0], rsp[1], rsp[2]
    if major != proto_major:
        raise ProtocolError(f"server speaks RPC protocol {major}.{minor}.{patch}, this client {proto_major}.x")
    info = {"version": f"{major}.{minor}.{patch}"}
    (count,) = struct.unpack("<I", call(sock, RPC_CMD_DEVICE_COUNT, b"", 4))
    devices = []
    for dev in range(count):
        req = struct.pack("<I", dev)
        free, total = struct.unpack("<QQ", call(sock, RPC_CMD_GET_DEVICE_MEMORY, req, 16))
        (align,) = struct.unpack("<Q", call(sock, RPC_CMD_GET_ALIGNMENT, req, 8))
        (max_size,) = struct.unpack("<Q", call(sock, RPC_CMD_GET_MAX_SIZE, req, 8))
        devices.append({"free": free, "total": total, "alignment": align, "max_size": max_size})
    info["devices"] = devices
    return info


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("endpoint", help="HOST:PORT of the RPC server")
    ap.add_argument(
        "--timeout",
        type=float,
        default=10.0,
        help="seconds allowed for connect plus handshake (default 10; 0 waits forever, as llama-server does)",
    )
    ap.add_argument(
        "--proto-major",
        type=int,
        default=5,
        help="RPC protocol major version to speak (default 5: llama.cpp b10359..b10470)",
    )
    ap.add_argument("--once", action="store_true", help="close right after the handshake instead of holding on")
    args = ap.parse_args(argv)
    if args.proto_major < 3:
        ap.error("RPC protocol 3 or later is needed (DEVICE_COUNT)")

    host, _, port = args.endpoint.rpartition(":")
    if not host or not port.isdigit():
        ap.error(f"endpoint must be HOST:PORT, not {args.endpoint!r}")

    def stop(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    t0 = time.monotonic()
    try:
        sock = socket.create_connection((host, int(port)), timeout=args.timeout or None)
    except TimeoutError:
        print(f"timeout: no TCP connection to {args.endpoint} within {args.timeout} s", flush=True)
        return 2
    except OSError as e:
        print(f"connect failed: {args.endpoint}: {e}", flush=True)
        return 1
    except KeyboardInterrupt:
        return 0
    print(f"tcp connected in {time.monotonic() - t0:.3f} s", file=sys.stderr, flush=True)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        info = handshake(sock, args.proto_major)
    except TimeoutError:
        print(
            f"timeout: TCP connected but no answer to HELLO within {args.timeout} s "
            "(is the server serving another client?)",
            flush=True,
        )
        return 2
    except ServerClosed as e:
        print(f"closed: {e}", flush=True)
        return 3
    except ProtocolError as e:
        print(f"protocol error: {e}", flush=True)
        return 4
    except KeyboardInterrupt:
        return 0
    devs = ", ".join(
        f"dev{i}: {d['total'] >> 20} MiB ({d['free'] >> 20} MiB free)" for i, d in enumerate(info["devices"])
    )
    print(
        f"connected to {args.endpoint}: RPC protocol {info['version']}, "
        f"{len(info['devices'])} device(s) [{devs}] in {time.monotonic() - t0:.3f} s",
        flush=True,
    )
    if args.once:
        sock.close()
        return 0
    sock.settimeout(None)
    try:
        while True:  # the server never sends unprompted: any byte or EOF means trouble
            data = sock.recv(4096)
            if not data:
                print("closed: the server closed the connection", flush=True)
                return 3
            print(f"unexpected {len(data)} bytes from the server", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        return 0
    except OSError as e:
        print(f"closed: {e}", flush=True)
        return 3
    finally:
        sock.close()


if __name__ == "__main__":
    sys.exit(main())
