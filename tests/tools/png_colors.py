#!/usr/bin/env python3
"""png_colors.py PNG RRGGBB... - the image's width and height, then for each
colour how many pixels have it (within 8 per channel), and how many distinct
colours the image has: enough for a test to tell a rendered page from a blank
one without an imaging library (8-bit RGB or RGBA, non-interlaced: what
chromium's --screenshot writes)."""
import struct
import sys
import zlib


def pixels(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("%s: not a PNG" % path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit("%s: only 8-bit RGB(A), non-interlaced" % path)
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride, prev, out = zlib.decompress(idat), w * bpp, None, []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x] if prev else 0
            c = prev[x - bpp] if prev and x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = line
        out.extend(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
    return w, h, out


w, h, px = pixels(sys.argv[1])
print(w, h)
for want in sys.argv[2:]:
    r, g, b = (int(want[i:i + 2], 16) for i in (0, 2, 4))
    print(want, sum(1 for p in px if abs(p[0] - r) <= 8 and abs(p[1] - g) <= 8 and abs(p[2] - b) <= 8))
print("colours", len(set(px)))
