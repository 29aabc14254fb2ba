#!/usr/bin/env python3
"""Summarises `perf script -F comm,tid,ip,sym,dso` output of the scheduler (bench/perf-profile.sh):
samples by thread, the leaf of the proxy's event loops by code (kernel, Netty, Heartgate, JDK...),
the innermost Heartgate frame and the top leaf symbols.

  bench/perf-summary.py PERF_SCRIPT.txt
"""
import sys, collections, re
path = sys.argv[1]
samples = []
cur = None
for line in open(path, errors='replace'):
    if not line.strip():
        if cur: samples.append(cur)
        cur = None
        continue
    if not line.startswith((' ', '\t')):
        cur = {'comm': line.split()[0], 'frames': []}
        continue
    if cur is not None:
        parts = line.strip().split(' ', 1)
        if len(parts) == 2:
            cur['frames'].append(parts[1])
if cur: samples.append(cur)
n = len(samples)
by_comm = collections.Counter(s['comm'] for s in samples)
print("samples", n)
for k, v in by_comm.most_common(8): print(f"  {k:30s} {100*v/n:5.1f}%")
def cat(f):
    if '[kernel.kallsyms]' in f: return 'kernel'
    if 'libjvm.so' in f: return 'jvm'
    if 'libc.so' in f: return 'libc'
    if 'netty_' in f or 'libnetty' in f: return 'netty-native'
    m = re.search(r'(io\.heartgate|io\.netty|java\.|jdk\.|sun\.|io\.micrometer|org\.HdrHistogram|com\.fasterxml|io\.vertx|org\.apache\.kafka)', f)
    if m: return m.group(1)
    if 'Interpreter' in f: return 'interpreter'
    return 'other:' + f[:60]
loops = [s for s in samples if s['comm'].startswith('heartgate-prox')]
print("proxy loop samples", len(loops))
leaf = collections.Counter(cat(s['frames'][0]) if s['frames'] else '?' for s in loops)
for k, v in leaf.most_common(14): print(f"  leaf {k:40s} {100*v/len(loops):5.1f}%")
# inclusive: first java frame (innermost) in heartgate
own = collections.Counter()
for s in loops:
    for f in s['frames']:
        if 'io.heartgate' in f:
            m = re.search(r'(io\.heartgate[\w.$]+)\(', f)
            own[m.group(1) if m else f[:80]] += 1
            break
print("innermost heartgate frame (incl. what it calls), proxy loops:")
for k, v in own.most_common(25): print(f"  {100*v/len(loops):5.1f}% {k}")
leafsym = collections.Counter()
for s in loops:
    if s['frames']:
        f = s['frames'][0]
        m = re.search(r'([\w.$<>]+)\(', f)
        leafsym[(m.group(1) if m else f.split(' (')[0])[:90]] += 1
print("top leaf symbols, proxy loops:")
for k, v in leafsym.most_common(30): print(f"  {100*v/len(loops):5.1f}% {k}")
