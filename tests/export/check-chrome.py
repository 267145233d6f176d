#!/usr/bin/env python3
# check-chrome.py: structural checks of a `csampler export --format chrome` file of the scripted
# CUDA workload (tests/cupti/script.h). Prints PASS:/FAIL: lines; exit status 1 on a failure.
#   check-chrome.py TRACE.json KEY=VALUE...   (the counts printed by script-counts)
import collections
import json
import re
import sys

fails = 0


def check(name, ok, why=""):
    global fails
    if ok:
        print(f"PASS: export/chrome/{name}")
    else:
        print(f"FAIL: export/chrome/{name}: {why}")
        fails += 1


path = sys.argv[1]
want = {k: int(v) for k, v in (a.split("=", 1) for a in sys.argv[2:])}
raw = open(path, encoding="utf-8").read()
try:
    trace = json.loads(raw)
    events = trace["traceEvents"]
    check("valid-json", isinstance(events, list) and len(events) > 0, "no traceEvents")
except (ValueError, KeyError, TypeError) as e:
    check("valid-json", False, str(e))
    sys.exit(1)

# Times: microseconds with exactly three decimals (nanoseconds), never exponents.
bad_ts = [m for m in re.findall(r'"(?:ts|dur)":([^,}]*)', raw) if not re.fullmatch(r"-?\d+\.\d{3}", m)]
check("times-ns-precision", not bad_ts, f"{len(bad_ts)} times not in N.NNN form, e.g. {bad_ts[:3]}")

proc_names, thread_names = {}, {}
for e in events:
    if e["ph"] == "M" and e["name"] == "process_name":
        proc_names[e["pid"]] = e["args"]["name"]
    if e["ph"] == "M" and e["name"] == "thread_name":
        thread_names[(e["pid"], e["tid"])] = e["args"]["name"]
tracks = {(e["pid"], e["tid"]) for e in events if e["ph"] != "M"}
unnamed = sorted(t for t in tracks if not thread_names.get(t))
check("thread-names", not unnamed and len(tracks) > 0, f"tracks without thread_name: {unnamed[:5]}")
unnamed_p = sorted({p for p, _ in tracks if not proc_names.get(p)})
check("process-names", not unnamed_p, f"processes without process_name: {unnamed_p[:5]}")

gpu_pids = {p for p, n in proc_names.items() if n.startswith("GPU ")}
gpu = [e for e in events if e["ph"] == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
by_cat = collections.Counter(e["cat"] for e in gpu)
check("counts/gpu", (by_cat["kernel"], by_cat["gpu_memcpy"], by_cat["gpu_memset"]) ==
      (want["KERNELS"], want["MEMCPYS"], want["MEMSETS"]),
      f"kernels, copies, memsets {by_cat['kernel']}, {by_cat['gpu_memcpy']}, {by_cat['gpu_memset']}; "
      f"the script has {want['KERNELS']}, {want['MEMCPYS']}, {want['MEMSETS']}")
names = collections.Counter(e["name"] for e in gpu if e["cat"] == "kernel")
check("kernel-names", names["forward_kernel(float*, int)"] == want["FORWARD"] and
      names["backward_kernel(float*, int)"] == want["BACKWARD"] and
      names["worker_kernel"] == want["WORKER"] and names["graph_kernel"] == 1, dict(names))
off_track = [e for e in gpu if e["pid"] not in gpu_pids or e["tid"] != e["args"]["stream"] or
             thread_names.get((e["pid"], e["tid"])) != f"stream {e['args']['stream']}"]
check("stream-tracks", not off_track,
      f"{len(off_track)} GPU slices not on their stream's track, e.g. {off_track[:1]}")
other_on_gpu = [e for e in events if e["pid"] in gpu_pids and e["ph"] not in ("M", "X", "f")]
check("gpu-tracks-only-gpu", not other_on_gpu, f"e.g. {other_on_gpu[:1]}")
gpu_args = [e for e in gpu if e["cat"] == "kernel" and
            not (len(e["args"].get("grid", [])) == 3 and len(e["args"].get("block", [])) == 3 and
                 "correlation" in e["args"])]
check("kernel-args", not gpu_args, f"kernels without grid/block/correlation, e.g. {gpu_args[:1]}")
copies = [e for e in gpu if e["cat"] == "gpu_memcpy" and e["args"].get("bytes", 0) <= 0]
check("copy-bytes", not copies, f"copies without bytes, e.g. {copies[:1]}")

# CPU threads: B/E properly nested, in time order, each E closing the slice on top.
stacks, last_ts, spans = collections.defaultdict(list), {}, collections.defaultdict(list)
nest_err = []
for e in events:
    if e["ph"] not in ("B", "E"):
        continue
    k = (e["pid"], e["tid"])
    if e["ts"] < last_ts.get(k, float("-inf")):
        nest_err.append(f"{k} goes back in time at {e['ts']}")
    last_ts[k] = e["ts"]
    if e["ph"] == "B":
        stacks[k].append(e)
    elif not stacks[k] or stacks[k][-1]["name"] != e["name"]:
        nest_err.append(f"{k} E {e['name']!r} at {e['ts']} closes {stacks[k][-1]['name'] if stacks[k] else 'nothing'!r}")
    else:
        b = stacks[k].pop()
        spans[k].append((b["ts"], e["ts"], b.get("cat"), b["name"], e.get("args", {})))
left = {k: len(v) for k, v in stacks.items() if v}
check("cpu-nesting", not nest_err and not left, f"{nest_err[:3]} unclosed {left}")

allspans = [s for v in spans.values() for s in v]
kinds = collections.Counter(s[2] for s in allspans)
check("counts/api", kinds["cuda_runtime"] + kinds["cuda_driver"] == want["APIS"],
      f"{kinds['cuda_runtime']} runtime + {kinds['cuda_driver']} driver API slices, the script has {want['APIS']}")
check("counts/sync", kinds["cuda_sync"] == want["SYNCS"] and
      all(s[3] == "Stream Synchronize" for s in allspans if s[2] == "cuda_sync"),
      f"{kinds['cuda_sync']} sync waits, the script has {want['SYNCS']}")
train = [s for s in allspans if s[2] == "nvtx" and s[3] == "train"]
check("nvtx-range", len(train) == 1 and round((train[0][1] - train[0][0]) * 1000) == want["RANGE_NS"],
      f"NVTX ranges named train: {train}")
instants = [e for e in events if e["ph"] == "i" and e.get("cat") == "nvtx"]
check("nvtx-instant", [e["name"] for e in instants] == ["checkpoint"] and
      (instants[0]["pid"], instants[0]["tid"]) in thread_names, f"{instants}")
cpu = [s for s in allspans if s[2] == "cpu"]
check("cpu-samples", len(cpu) > 0 and all(s[3] for s in cpu) and all(s[1] >= s[0] for s in cpu),
      f"{len(cpu)} CPU frame slices")

# Flows: one start and one end per id; the end on the GPU slice of that correlation id, the
# start inside the launching API call's slice on a CPU thread.
flows = collections.defaultdict(dict)
dup = []
for e in events:
    if e["ph"] in ("s", "f"):
        if e["ph"] in flows[e["id"]]:
            dup.append(e["id"])
        flows[e["id"]][e["ph"]] = e
halves = [i for i, f in flows.items() if set(f) != {"s", "f"}]
check("flows-both-ends", not halves and not dup and len(flows) == len(gpu),
      f"{len(flows)} flows for {len(gpu)} GPU slices, {len(halves)} with one end, {len(dup)} duplicated")
gpu_at = {(e["pid"], e["tid"], e["ts"], e["args"]["correlation"]): e for e in gpu}
bad_f = [i for i, f in flows.items() if "f" in f and
         (f["f"]["pid"], f["f"]["tid"], f["f"]["ts"], i) not in gpu_at or f.get("f", {}).get("bp") != "e"]
check("flows-end-on-kernel", not bad_f, f"{len(bad_f)} flow ends not on their GPU slice, e.g. {bad_f[:3]}")
bad_s = []
launch_of = {}
for i, f in flows.items():
    s = f.get("s")
    if not s:
        continue
    k = (s["pid"], s["tid"])
    inside = [sp for sp in spans.get(k, []) if sp[2] in ("cuda_runtime", "cuda_driver") and
              sp[0] <= s["ts"] <= sp[1]]
    if not inside or k not in thread_names or s["pid"] in gpu_pids:
        bad_s.append(i)
    else:
        launch_of[i] = (inside[-1][3], s["tid"] == s["pid"])
check("flows-start-in-api-call", not bad_s,
      f"{len(bad_s)} flow starts not inside an API call on a CPU thread, e.g. {bad_s[:3]}")
# Which call launched what: forward/backward from the main thread, worker kernels from worker
# threads, each from the driver call the library records (its default subscription: the
# cuLaunchKernel inside cudaLaunchKernel, the cuGraphLaunch inside cudaGraphLaunch).
kernel_calls = collections.Counter()
for e in gpu:
    if e["cat"] == "kernel" and e["args"]["correlation"] in launch_of:
        call, main = launch_of[e["args"]["correlation"]]
        kernel_calls[(e["name"].split("(")[0], call, "main" if main else "worker")] += 1
expect_calls = {("forward_kernel", "cuLaunchKernel", "main"): want["FORWARD"],
                ("backward_kernel", "cuLaunchKernel", "main"): want["BACKWARD"],
                ("worker_kernel", "cuLaunchKernel", "worker"): want["WORKER"],
                ("graph_kernel", "cuGraphLaunch", "main"): 1}
check("flows-from-launching-call", dict(kernel_calls) == expect_calls, dict(kernel_calls))
worker_threads = {(s["pid"], s["tid"]) for f in flows.values() if (s := f.get("s")) and s["tid"] != s["pid"]}
check("worker-threads", len(worker_threads) == want["WORKERS"], f"{worker_threads}")
sys.exit(1 if fails else 0)
