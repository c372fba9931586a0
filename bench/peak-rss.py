#!/usr/bin/env python3
"""The peak resident memory of a process and, summed, of all its descendants (a browser's own processes:
renderers, GPU, network), sampled every 0.2 s until it ends; printed as two numbers in KiB. Usage: peak-rss.py PID
(run in the background beside the process: bench/audit-site.sh, bench/audit-fleet.sh)."""
import os, sys, time
root = int(sys.argv[1])
def rss(pid):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmRSS:"): return int(line.split()[1])
    except OSError: pass
    return 0
def children():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try: ppid = int(open("/proc/%s/stat" % d).read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError): continue
            kids.setdefault(ppid, []).append(int(d))
    return kids
peak_a = peak_b = 0
while os.path.exists("/proc/%d" % root) and rss(root):
    kids = children(); todo = list(kids.get(root, [])); total = 0
    while todo:
        p = todo.pop(); total += rss(p); todo += kids.get(p, [])
    peak_a = max(peak_a, rss(root)); peak_b = max(peak_b, total)
    time.sleep(0.2)
print(peak_a, peak_b)
