#!/usr/bin/env python3
# hostile.py: writes the hand-made hostile data files of tests/fuzz/regress/ (run by hand; the
# files are checked in, tests/fuzz/t-regress.sh reads them and tests/fuzz/regress/EXPECT says
# what csampler must answer to each). Every chunk carries a correct CRC unless the file is
# about the CRC, so each file reaches the check it is named after.
#   tests/fuzz/hostile.py DIR          write the files into DIR
#   tests/fuzz/hostile.py --fix-crc F  rewrite F's chunk CRCs (a crash input found by the fuzz
#                                      build, which ignores CRCs, then reaches the same code in
#                                      the normal build)
import struct, subprocess, sys, zlib

def header(version=1, min_reader=1, header_size=64):
    h = b"CSAMPLER" + struct.pack("<IIQI", version, min_reader, 0, header_size)
    return h + b"\0" * (64 - len(h))

def rec(rtype, payload):
    return struct.pack("<HHI", rtype, 0, 8 + len(payload)) + payload

def chunk(records, crc=None, flags=0, stored=None, raw_len=None):
    data = b"".join(records) if stored is None else stored
    c = zlib.crc32(data) if crc is None else crc
    rl = len(data) if raw_len is None else raw_len
    return struct.pack("<IIIIII", 0x4B4E4843, flags, len(data), rl, c, len(records)) + data

END = rec(13, struct.pack("<QQQI", 0, 0, 0, 1))
MODULE = rec(7, struct.pack("<II", 0, 0) + b"/bin/app\0\0")
LOC = rec(8, struct.pack("<IIQI", 0, 0, 0x1000, 0))
STACK = rec(9, struct.pack("<III", 0, 1, 0))
def sample(stack, weight=1):
    return rec(10, struct.pack("<QIIIIII", 1000, 1, 1, 0, stack, 0, weight))

FILES = {
    "hostile-empty.data": b"",
    "hostile-magic-only.data": b"CSAMPLER",
    "hostile-header-only.data": header(),
    "hostile-future-version.data": header(version=99, min_reader=99) + chunk([END]),
    "hostile-header-size.data": header(header_size=1 << 20) + chunk([END]),
    "hostile-chunk-huge.data": header() + struct.pack("<IIIIII", 0x4B4E4843, 0, 0xFFFFFFFF,
                                                        0xFFFFFFFF, 0, 1),
    "hostile-crc-mismatch.data": header() + chunk([MODULE, LOC, STACK, sample(0), END],
                                                  crc=0x12345678),
    "hostile-zstd-garbage.data": header() + chunk([END], flags=1, stored=b"\x28\xb5\x2f\xfd" +
                                                  b"\xff" * 20, raw_len=36),
    "hostile-record-overrun.data": header() + chunk([struct.pack("<HHI", 1, 0, 4096) + b"k\0v\0"]),
    "hostile-sample-bad-stack.data": header() + chunk([MODULE, LOC, STACK, sample(7), END]),
    "hostile-stack-bad-loc.data": header() + chunk([MODULE, rec(9, struct.pack("<III", 0, 1, 3)),
                                                    END]),
    "hostile-unknown-type.data": header() + chunk([rec(99, b"x"), END]),
    "hostile-after-end.data": header() + chunk([END, MODULE]),
    "hostile-optional-type.data": header() + chunk([MODULE, LOC, STACK, rec(200, b"future"),
                                                    sample(0, 3), END]),
}

def zchunk(records):
    raw = b"".join(records)
    z = subprocess.run(["zstd", "-19", "-c"], input=raw, capture_output=True, check=True).stdout
    return struct.pack("<IIIIII", 0x4B4E4843, 1, len(z), len(raw), zlib.crc32(z),
                       len(records)) + z

# 4,100 stacks of 1,024 times the same location, whose inline chain is 64 frames (record's
# limits): 2^28 + 262,144 frames once expanded, from about 20 KB of zstd chunks.
def frames_bomb():
    sym = rec(12, struct.pack("<II", 0, 64) + struct.pack("<IIII", 0, 0, 0, 0) * 64)
    out = header() + chunk([MODULE, LOC, sym])
    stacks = [rec(9, struct.pack("<II", i, 1024) + b"\0" * 4096) for i in range(4100)]
    for i in range(0, len(stacks), 2000):
        out += zchunk(stacks[i:i + 2000])
    return out + chunk([sample(0), END])

FILES["datafile-frames-bomb.data"] = frames_bomb()

def fix_crc(path):
    b = bytearray(open(path, "rb").read())
    if len(b) < 64:
        return
    off = struct.unpack_from("<I", b, 24)[0]
    while off + 24 <= len(b):
        stored_len = struct.unpack_from("<I", b, off + 8)[0]
        data = bytes(b[off + 24: off + 24 + stored_len])
        if len(data) < stored_len:
            break
        struct.pack_into("<I", b, off + 16, zlib.crc32(data))
        off += 24 + stored_len
    open(path, "wb").write(bytes(b))

if __name__ == "__main__":
    if sys.argv[1] == "--fix-crc":
        for p in sys.argv[2:]:
            fix_crc(p)
    else:
        for name, data in FILES.items():
            open(f"{sys.argv[1]}/{name}", "wb").write(data)
