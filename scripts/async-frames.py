#!/usr/bin/env python3
"""The async frame size of every async function in a binary, largest first: a profiling aid,
not a test.

Every request in flight keeps the async frames of the functions it is suspended in, on its
task's stack allocator (slabs of about 1 KB, kept until the task ends); a held read keeps them
for as long as it waits, which makes them most of what it costs (docs/PERFORMANCE.md, Fan-out).
Swift stores each async function's frame size next to it, in its "async function pointer"
(symbol suffix `Tu`: a 32-bit relative address, then the 32-bit size), so a release build says
what each frame costs without running it.

  scripts/async-frames.py BINARY [PATTERN]   (PATTERN: a regular expression on the demangled name)
e.g. scripts/async-frames.py .build/release/tsync 'Middleware|TableRoutes.list|LiveWait'
"""
import re
import struct
import subprocess
import sys


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    binary = sys.argv[1]
    pattern = re.compile(sys.argv[2]) if len(sys.argv) == 3 else None
    sections = []
    for line in subprocess.run(["readelf", "-SW", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split("]", 1)[1].split() if line.strip().startswith("[") and "]" in line else []
        try:
            sections.append((int(fields[2], 16), int(fields[3], 16), int(fields[4], 16)))
        except (IndexError, ValueError):
            continue
    data = open(binary, "rb").read()

    def read(address, count):
        for start, offset, size in sections:
            if start and start <= address < start + size:
                return data[offset + address - start:offset + address - start + count]
        return None

    symbols = []
    for line in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 3 and fields[2].endswith("Tu"):
            pointer = read(int(fields[0], 16), 8)
            if pointer and len(pointer) == 8:
                symbols.append((struct.unpack("<iI", pointer)[1], fields[2]))
    names = subprocess.run(["swift", "demangle", "--simplified"], input="\n".join(name for _, name in symbols),
                           capture_output=True, text=True, check=True).stdout.splitlines()
    rows = sorted(((size, name.removeprefix("async function pointer to ")) for (size, _), name in zip(symbols, names)),
                  key=lambda row: -row[0])
    for size, name in rows:
        if pattern is None or pattern.search(name):
            print(f"{size:6d}  {name}")


if __name__ == "__main__":
    main()
