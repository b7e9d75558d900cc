#!/usr/bin/env python3
"""A native viewer's resize, in RFB (RFC 6143 and the ExtendedDesktopSize extension): connects to a
desktop's Unix socket with security type None (a Wayland desktop's wayvnc), reads the size, asks
for WIDTHxHEIGHT with SetDesktopSize, and reads updates until the server says the size changed.
Prints one JSON object: {"before": [w, h], "after": [w, h], "status": N or null}.

    set_desktop_size.py SOCKET WIDTH HEIGHT
"""

import json
import socket
import struct
import sys
import time

RAW, DESKTOP_SIZE, EXTENDED_DESKTOP_SIZE = 0, -223, -308


def main():
    path, width, height = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    connection = socket.socket(socket.AF_UNIX)
    connection.settimeout(10)
    connection.connect(path)

    def read(count):
        data = b""
        while len(data) < count:
            chunk = connection.recv(count - len(data))
            if not chunk:
                raise EOFError("the server closed the connection")
            data += chunk
        return data

    version = read(12)
    connection.sendall(b"RFB 003.008\n")
    types = read(read(1)[0])
    if 1 not in types:
        raise SystemExit(f"no security type None among {list(types)} ({version!r})")
    connection.sendall(b"\x01")
    if struct.unpack(">I", read(4))[0] != 0:
        raise SystemExit("security None refused")
    connection.sendall(b"\x01")  # shared
    current = list(struct.unpack(">HH", read(4)))
    pixel_format = read(16)
    bytes_per_pixel = pixel_format[0] // 8
    read(struct.unpack(">I", read(4))[0])
    before = list(current)

    encodings = [RAW, DESKTOP_SIZE, EXTENDED_DESKTOP_SIZE]
    connection.sendall(struct.pack(">BxH", 2, len(encodings)) + b"".join(struct.pack(">i", e) for e in encodings))

    screen_id = 0
    status = None
    asked = False
    deadline = time.monotonic() + 10
    incremental = 0
    while time.monotonic() < deadline:
        connection.sendall(struct.pack(">BBHHHH", 3, incremental, 0, 0, current[0], current[1]))
        incremental = 1
        kind = read(1)[0]
        if kind == 0:
            read(1)
            for _ in range(struct.unpack(">H", read(2))[0]):
                x, y, w, h, encoding = struct.unpack(">HHHHi", read(12))
                if encoding == RAW:
                    read(w * h * bytes_per_pixel)
                elif encoding == DESKTOP_SIZE:
                    current = [w, h]
                elif encoding == EXTENDED_DESKTOP_SIZE:
                    screens = read(4)[0]
                    for index in range(screens):
                        entry = read(16)
                        if index == 0:
                            screen_id = struct.unpack(">I", entry[:4])[0]
                    # x is who asked (1: this client), y the status (0: done)
                    if asked and x == 1:
                        status = y
                    current = [w, h]
                else:
                    raise SystemExit(f"unexpected encoding {encoding}")
        elif kind == 2:
            pass  # bell
        elif kind == 3:
            read(3)
            read(struct.unpack(">I", read(4))[0])
        else:
            raise SystemExit(f"unexpected server message {kind}")
        if not asked:
            connection.sendall(struct.pack(">BxHHBx", 251, width, height, 1) + struct.pack(">IHHHHI", screen_id, 0, 0, width, height, 0))
            asked = True
        elif current == [width, height]:
            break
    print(json.dumps({"before": before, "after": current, "status": status}))


main()
