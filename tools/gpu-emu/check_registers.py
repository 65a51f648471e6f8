#!/usr/bin/env python3
"""Registers per thread against the block sizes kernels are launched with.

A kernel whose registers per thread, times the threads of a block it is
launched with, pass the multiprocessor's 65,536 registers fails to launch on
the GPU (cudaErrorLaunchOutOfResources) -- and only there: the CPU emulation
has no registers. This joins what ptxas reported for each kernel (`nvcc
-Xptxas -v`: "Compiling entry function '<mangled>' for 'sm_90'", then "Used N
registers") with the most threads one block of it had in the emulated GPU
tests (EMU_STATS=<file>), by the kernel's base name (its name without
namespace, template arguments or parameters; instantiations are taken at their
most registers and their largest block). Registers are allocated per warp in
units of 256 (sm_90), so a block of t threads needs
ceil(t / 32) * ceil(32 r / 256) * 256 of them.

A launch named only by a pointer (`k<<<...>>>`, a name ptxas does not know)
must keep to 256 threads: every kernel fits there (ptxas allots at most 255
registers a thread). Exit status 1 and a line per kernel that does not fit.

  check_registers.py <nvcc build log> <EMU_STATS file>
  check_registers.py --self-test
"""
import math
import re
import subprocess
import sys

REGISTERS_PER_SM = 65536
ALLOCATION_UNIT = 256  # registers, per warp
SAFE_BLOCK = 256       # threads: any kernel (<= 255 registers) fits


def demangle(names):
    if not names:
        return []
    try:
        out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
        return out.split("\n")[: len(names)]
    except (OSError, subprocess.CalledProcessError):
        return names


def base_name(spelled):
    """`void ns::(anonymous namespace)::kern<T, 4>(Args)` or `kern<T, N>` -> `kern`."""
    s = spelled.replace("(anonymous namespace)", "anon")
    s = re.sub(r"^void\s+", "", s.strip())
    m = re.match(r"([\w:]+)", s)
    return m.group(1).split("::")[-1] if m else s


def ptxas_registers(log_text):
    """Base name -> the most registers any instantiation uses."""
    entries = []
    current = None
    for line in log_text.splitlines():
        m = re.search(r"Compiling entry function '([^']+)' for 'sm_\d+a?'", line)
        if m:
            current = m.group(1)
            continue
        m = re.search(r"Used (\d+) registers", line)
        if m and current:
            entries.append((current, int(m.group(1))))
            current = None
    regs = {}
    for (mangled, r), name in zip(entries, demangle([e[0] for e in entries])):
        b = base_name(name)
        regs[b] = max(regs.get(b, 0), r)
    return regs


def emulated_blocks(stats_text):
    """Base name -> the most threads one block had (the launch's spelling)."""
    blocks = {}
    for line in stats_text.splitlines():
        m = re.match(r"\s*\d+\s+\d+\s+\d+\s+(\d+)\s+(.*?)\s{2}\(", line)
        if not m:
            continue
        b = base_name(m.group(2))
        blocks[b] = max(blocks.get(b, 0), int(m.group(1)))
    return blocks


def needed(registers, threads):
    per_warp = math.ceil(32 * registers / ALLOCATION_UNIT) * ALLOCATION_UNIT
    return math.ceil(threads / 32) * per_warp


def check(regs, blocks):
    bad = []
    for b, threads in sorted(blocks.items()):
        if b in regs:
            n = needed(regs[b], threads)
            if n > REGISTERS_PER_SM:
                bad.append(f"{b}: {regs[b]} registers a thread at {threads} threads a block need {n} "
                           f"registers, above the {REGISTERS_PER_SM} of a multiprocessor")
        elif threads > SAFE_BLOCK:
            bad.append(f"{b}: launched with {threads} threads a block, but ptxas reports no kernel of that name "
                       f"(launch it by its name, or keep to {SAFE_BLOCK} threads)")
    return bad


def self_test():
    log = "\n".join([
        "ptxas info    : Compiling entry function '_ZN3nnc4cuda12_GLOBAL__N_14rowsILi4EEEvPf' for 'sm_90'",
        "ptxas info    : Used 106 registers, used 1 barriers, 400 bytes cmem[0]",
        "ptxas info    : Compiling entry function '_ZN3nnc4cuda12_GLOBAL__N_14rowsILi8EEEvPf' for 'sm_90'",
        "ptxas info    : Used 130 registers, used 1 barriers, 400 bytes cmem[0]",
        "ptxas info    : Compiling entry function '_ZN3nnc4cuda12_GLOBAL__N_15smallEPf' for 'sm_90'",
        "ptxas info    : Used 40 registers, 368 bytes cmem[0]",
    ])
    regs = ptxas_registers(log)
    assert regs == {"rows": 130, "small": 40}, regs
    assert needed(106, 512) == 57344 and needed(128, 512) == 65536 and needed(130, 512) == 69632
    assert needed(255, 256) == 65536
    stats = "\n".join([
        "gpu-emu: 3 kernels launched (...):",
        "         6         36         2304    512  rows<Elem, decltype(k)::value>  (operator())",
        "         4         24         3840   1024  small  (launch_small)",
        "         2          2          256    256  k  (launch_kernel)",
    ])
    blocks = emulated_blocks(stats)
    assert blocks == {"rows": 512, "small": 1024, "k": 256}, blocks
    bad = check(regs, blocks)
    assert len(bad) == 1 and bad[0].startswith("rows: 130 registers"), bad  # 40 x 1024 fits exactly
    assert check({"rows": 128}, {"rows": 512}) == []
    assert len(check({}, {"k": 512})) == 1 and check({}, {"k": 256}) == []
    print("check_registers: self-test passed")


def main(argv):
    if argv[1:] == ["--self-test"]:
        self_test()
        return 0
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[-2], file=sys.stderr)
        return 2
    with open(argv[1], errors="replace") as f:
        regs = ptxas_registers(f.read())
    with open(argv[2], errors="replace") as f:
        blocks = emulated_blocks(f.read())
    if not regs:
        print("check_registers: no ptxas register counts in the build log (nvcc -Xptxas -v?)", file=sys.stderr)
        return 1
    if not blocks:
        print("check_registers: no launches in the emulator's statistics", file=sys.stderr)
        return 1
    bad = check(regs, blocks)
    for line in bad:
        print("check_registers: " + line)
    joined = sum(1 for b in blocks if b in regs)
    most = max(regs.values())
    print(f"check_registers: {len(regs)} kernels from ptxas (at most {most} registers a thread), {len(blocks)} launched "
          f"in emulation ({joined} by name), largest block {max(blocks.values())} threads: "
          f"{'all fit' if not bad else str(len(bad)) + ' do not fit'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
