#!/usr/bin/env python3
"""GPU_REF under CPU emulation (see CMakeLists.txt here): copies a .cu file to
a host C++ file with each kernel launch `K<...><<<grid, block[, shmem[,
stream]]>>>(args);` rewritten to
    ::emu::launch(grid, block, shmem, stream, "K<...>", __func__, func,
                  [=](auto... emu_a) { K<...>(emu_a...); }, args);
(func: the kernel's address, ::emu::kernel_address(K<...>), when shmem is not
the literal 0; nullptr otherwise; the arguments are evaluated at the launch
and copied into it, since it runs later, when its stream's work does),
each `extern __shared__ [__align__(n)] T name[];` (dynamic shared memory)
rewritten to `T* const name = static_cast<T*>(::emu::dynamic_shared());`, and
nothing else changed (a #line directive keeps compiler messages pointing
at the .cu file; newlines inside a launch are kept, so lines still match).
Works inside macro definitions (backslash-newlines are kept as they were).
    rewrite_launches.py in.cu out.cpp
"""
import re
import sys


def split_top(s):
    """Splits s at the commas outside (), [], {}."""
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch in '([{':
            depth += 1
        elif ch in ')]}':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur)
            cur = ''
        else:
            cur += ch
    out.append(cur)
    return [x.strip() for x in out]


def rewrite(s, path):
    out = []
    pos = 0
    while True:
        i = s.find('<<<', pos)
        if i < 0:
            break
        # Back over whitespace (and backslash-newlines) to the kernel's name,
        # then over its template arguments <...>, then over the name itself.
        j = i
        while s[j - 1] in ' \t\n\\':
            j -= 1
        k = j
        if s[k - 1] == '>':
            depth = 0
            while True:
                k -= 1
                if s[k] == '>':
                    depth += 1
                elif s[k] == '<':
                    depth -= 1
                    if depth == 0:
                        break
        while re.match(r'[\w:]', s[k - 1]):
            k -= 1
        name, gap = s[k:j], s[j:i]
        e = s.index('>>>', i)
        cfg = split_top(s[i + 3:e])
        if not 2 <= len(cfg) <= 4:
            sys.exit('%s: cannot read the launch configuration <<<%s>>>' % (path, s[i + 3:e]))
        while len(cfg) < 4:
            cfg.append('0')
        p = e + 3
        gap2 = ''
        while s[p] in ' \t\n\\':
            gap2 += s[p]
            p += 1
        if s[p] != '(':
            sys.exit('%s: no argument list after a launch of %s' % (path, name))
        depth, q = 0, p
        while True:
            if s[q] == '(':
                depth += 1
            elif s[q] == ')':
                depth -= 1
                if depth == 0:
                    break
            q += 1
        args = s[p + 1:q]
        out.append(s[pos:k])
        # Launches with dynamic shared memory pass the kernel's address, so
        # the emulation can hold them to the opt-in above 48 KiB
        # (cudaFuncSetAttribute) as a GPU does; others pass NULL (a kernel
        # template deduced from its arguments has no address to take).
        func = 'nullptr' if cfg[2] == '0' else '::emu::kernel_address(%s)' % name
        out.append('::emu::launch(%s, %s, %s, %s, "%s", __func__, %s,%s%s[=](auto... emu_a) { %s(emu_a...); }%s)' %
                   (cfg[0], cfg[1], cfg[2], cfg[3], name, func, gap, gap2, name, ', ' + args if args.strip() else args))
        pos = q + 1
    out.append(s[pos:])
    return ''.join(out)


DYNAMIC_SHARED = re.compile(
    r'extern\s+__shared__\s+(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:<>, ]*?)\s+'
    r'(?:__align__\s*\(\s*\d+\s*\)\s+)?([A-Za-z_]\w*)\s*\[\s*\]\s*;')


def rewrite_shared(s):
    return DYNAMIC_SHARED.sub(
        lambda m: '%s* const %s = static_cast<%s*>(::emu::dynamic_shared());' % (m.group(1), m.group(2), m.group(1)), s)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        s = f.read()
    text = '#line 1 "%s"\n' % src + rewrite(rewrite_shared(s), src)
    try:
        with open(dst) as f:
            if f.read() == text:
                return  # unchanged: keep the timestamp (no rebuild)
    except OSError:
        pass
    with open(dst, 'w') as f:
        f.write(text)


if __name__ == '__main__':
    main()
