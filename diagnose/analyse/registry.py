"""The metric catalogue: every metric diagnose computes, as data in one place.

Each entry says its name, unit, the collectors it comes from (all needed), how it is
computed, and, for the metrics that have one, which direction is better (``diagnose
compare`` judges a change by it). The catalogue is complete whatever is imported: it is
the list of names rule conditions may use (a rule naming another is rejected when loaded),
the source of ``docs/metrics.md`` (``python -m diagnose.analyse.docgen``), and what the
analysis reports as not measured, with the reason, when no step wrote a value.

Entries are in the order docs/metrics.md lists them. A new analysis step adds its metrics
here; :mod:`diagnose.analyse.pipeline` says how to add the step itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

Better = Literal["higher", "lower"]


@dataclass(frozen=True)
class MetricDef:
    name: str
    unit: str
    sources: tuple[str, ...]  # collectors the value comes from (all needed)
    description: str
    kind: Literal["number", "text"] = "number"
    better: Better | None = None  # the direction compare calls better; None: not judged


def _def(
    name: str,
    unit: str,
    sources: str,
    description: str,
    kind: Literal["number", "text"] = "number",
    better: Better | None = None,
) -> MetricDef:
    return MetricDef(
        name, unit, tuple(s for s in sources.split(",") if s), description, kind, better
    )


CATALOGUE: tuple[MetricDef, ...] = (
    # --- thread counts ---
    _def("window_s", "s", "proc", "Length of the analysed window (first to last /proc tick)."),
    _def("threads_total", "threads", "proc", "Distinct threads seen during the window."),
    _def(
        "threads_python", "threads", "proc,pyspy", "Threads with a Python stack (py-spy saw them)."
    ),
    _def(
        "threads_native",
        "threads",
        "proc,pyspy",
        "Threads without a Python stack: native pools (OpenMP, BLAS, onnxruntime, torch) and helpers.",
    ),
    _def(
        "threads_busy",
        "threads",
        "proc",
        "Threads busy (running, runnable, or waiting on a lock, the GIL or I/O) for at least 20% of the time they were seen.",
    ),
    _def(
        "cpu_bound_threads",
        "threads",
        "proc",
        "Threads that wanted a CPU (running or runnable) at least 80% of the time they were seen (and were seen for a quarter of the window or more): threads that never block. More of them than cores oversubscribes the cores whatever else runs on the host.",
    ),
    _def(
        "app_threads_busy",
        "threads",
        "proc,pyspy",
        "Busy threads that run Python code (request handlers, workers).",
    ),
    _def(
        "native_threads_busy",
        "threads",
        "proc,pyspy",
        "Busy threads without Python frames (intra-op pools of BLAS/OpenMP/onnxruntime/torch).",
    ),
    # --- the target process and the host's CPUs ---
    _def(
        "process_cpu_cores",
        "cores",
        "proc",
        "CPU time used by the target per second of wall time (utime+stime of /proc/PID/stat).",
    ),
    _def("process_cpu_share", "share", "proc,system", "process_cpu_cores / cores_available."),
    _def(
        "host_cpu_util",
        "share",
        "proc",
        "Mean utilisation of the CPUs the target may use, whoever used them (/proc/stat).",
    ),
    _def(
        "host_other_cpu_share",
        "share",
        "proc,system",
        "host_cpu_util - process_cpu_share: the share of the usable CPUs busy with work other than the target (diagnose's own collectors included).",
    ),
    _def(
        "process_sys_share",
        "share",
        "proc",
        "System (kernel) CPU time / all CPU time of the target. Above ~0.1 the kernel is busy switching threads, spinning in sched_yield or handling futex calls for the target.",
    ),
    _def(
        "process_share_of_cpu_used",
        "share",
        "proc,system",
        "process_cpu_share / host_cpu_util: of the CPU time used on the target's CPUs, the part the target used. Low while its threads wait for a core means other processes hold the cores.",
    ),
    _def(
        "tool_cpu_cores",
        "cores",
        "proc",
        "CPU time diagnose itself and its helpers (py-spy, perf) used per second of the capture: what measuring cost the host.",
    ),
    _def("tool_cpu_share", "share", "proc,system", "tool_cpu_cores / cores_available."),
    _def(
        "host_foreign_cpu_share",
        "share",
        "proc,system",
        "host_other_cpu_share - tool_cpu_share: the share of the usable CPUs busy with processes other than the target and diagnose.",
    ),
    _def(
        "host_client_cpu_share",
        "share",
        "proc,host_procs,system",
        "Share of the usable CPUs used by the target's clients on the same host: processes holding a TCP connection to a port the target listens on (a load generator, a proxy) (proc/host.csv).",
    ),
    _def(
        "host_service_cpu_share",
        "share",
        "proc,host_procs,system",
        "Share of the usable CPUs used by the target's own service besides the target: processes holding one of its listening sockets (the other workers of a pre-fork server, its master).",
    ),
    _def(
        "service_processes",
        "processes",
        "system",
        "Processes of the target's service that do its work: the target and its sibling workers (a pre-fork server's other workers, from target selection); 1 for a service of one process.",
    ),
    _def(
        "service_cpu_share",
        "share",
        "proc,host_procs,system",
        "process_cpu_share + host_service_cpu_share: the share of the usable CPUs the whole service used (every worker of a pre-fork server); the process's own share where it has no sibling workers and the other processes were not scanned.",
    ),
    _def(
        "stage_cpu_share",
        "share",
        "proc,host_procs,system",
        "The share of the usable CPUs used by the service's processes that do this process's work: the whole service (service_cpu_share) for replicas such as a pre-fork server's workers; for a process that feeds a sibling process's model (it sends work to it and calls no model itself), the feeding processes' CPU together.",
    ),
    _def(
        "host_neighbour_cpu_share",
        "share",
        "proc,host_procs,system",
        "Share of the usable CPUs used by every other process (neither the target, nor diagnose, nor the target's clients or service): neighbours that take the cores.",
    ),
    _def(
        "host_client_names",
        "text",
        "proc,host_procs",
        "The target's clients on the same host that used CPU, busiest first: 'comm (PID)', comma-separated ('' when none did).",
        kind="text",
    ),
    _def(
        "host_neighbour_names",
        "text",
        "proc,host_procs",
        "The neighbours that used most CPU, busiest first, up to three: 'comm (PID)'.",
        kind="text",
    ),
    _def("rss_mb", "MiB", "proc", "Resident memory of the target at the end of the window."),
    _def(
        "rss_growth_mb_per_min",
        "MiB/min",
        "proc",
        "Slope of a least-squares line through RSS over the window.",
        better="lower",
    ),
    _def(
        "dep_outstanding_mean",
        "requests",
        "proc",
        "Requests outstanding at dependencies, on average: the target's outbound TCP connections that sent more recently than they received (the kernel's tcp_info, read every 5th /proc tick; collect/tcpinfo.py).",
    ),
    _def(
        "dep_lanes",
        "connections",
        "proc",
        "The most outbound connections seen awaiting replies at once: the lanes its requests to dependencies go through.",
    ),
    _def(
        "dep_lanes_busy",
        "share",
        "proc",
        "How busy the lanes were: dep_outstanding_mean / dep_lanes, the share of the time a lane awaited a reply.",
    ),
    _def(
        "clients_active_mean",
        "connections",
        "proc",
        "Accepted TCP connections that received data in the last second, on average: clients with traffic.",
    ),
    _def(
        "dep_queue_share",
        "share",
        "proc",
        "1 - dep_lanes / clients_active_mean: the share of requests in flight beyond the lanes (one per client with traffic), which wait inside the process for a lane; 0 without lanes.",
        better="lower",
    ),
    _def(
        "busy_share_io_loop",
        "share",
        "proc",
        "The part of busy_share_io a thread spent polling its own clients too while a dependency it polls awaited a reply (an event loop free to take other work: proc sock = loop).",
    ),
    _def(
        "busy_share_dep_queue",
        "share",
        "proc",
        "The part of busy_share_io spent queued for a lane to a dependency: busy_share_io_loop x dep_queue_share where the lanes were busy (dep_lanes_busy >= 0.5, analyse/lanes.py), else 0.",
        better="lower",
    ),
    _def(
        "busy_share_io_dependency",
        "share",
        "proc",
        "busy_share_io less busy_share_dep_queue: the I/O wait at the dependency itself (all of busy_share_io where the socket times were not read).",
        better="lower",
    ),
    _def("minflt_per_s", "1/s", "proc", "Minor page faults of the process per second."),
    _def(
        "majflt_per_s",
        "1/s",
        "proc",
        "Major page faults (read from disk) of the process per second.",
        better="lower",
    ),
    # --- thread states: where busy time went ---
    _def("thread_time_s", "thread-s", "proc", "Sum over threads of the time each was observed."),
    _def(
        "busy_time_s",
        "thread-s",
        "proc",
        "Sum over threads of running + runnable + gil + lock + io time.",
    ),
    _def(
        "busy_share_running",
        "share",
        "proc",
        "Running (on a CPU) time / busy time.",
        better="higher",
    ),
    _def(
        "busy_share_runnable",
        "share",
        "proc",
        "Runnable time (ready, waiting for a core; schedstat run_delay) / busy time.",
        better="lower",
    ),
    _def(
        "busy_share_gil",
        "share",
        "proc,system",
        "Time blocked on the GIL / busy time.",
        better="lower",
    ),
    _def(
        "busy_share_gil_all",
        "share",
        "proc,system",
        "busy_share_gil plus the waits on the top lock whose holder was queueing for the GIL meanwhile: lock_top_share x lock_top_holder_gil_wait_share (added only where perf measured the holder's GIL waits).",
        better="lower",
    ),
    _def(
        "lock_top_share_net",
        "share",
        "proc,pyspy",
        "lock_top_share less the part its holder spent waiting for the GIL (x (1 - lock_top_holder_gil_wait_share)): the waits the work done under the lock explains; lock_top_share where that was not measured.",
        better="lower",
    ),
    _def(
        "busy_share_lock",
        "share",
        "proc,pyspy",
        "Time blocked on locks, semaphores and pools / busy time.",
        better="lower",
    ),
    _def(
        "busy_share_io",
        "share",
        "proc",
        "Time blocked in I/O (disk, sockets, pipes, HTTP/DB clients) / busy time.",
        better="lower",
    ),
    _def(
        "idle_share", "share", "proc", "Idle time (sleeping, waiting for work) / all thread time."
    ),
    _def(
        "idle_share_client",
        "share",
        "proc,pyspy",
        "Share of idle time spent waiting for the service's own clients: a server thread reading the next request on a kept-alive connection, or writing a response a client reads slowly (a socket wait on behalf of http.server, socketserver, gunicorn, uvicorn, h11, werkzeug, ...: rules/frames.toml [waits] client). Client-bound, not a dependency.",
    ),
    _def(
        "io_wait_top_frame",
        "text",
        "proc,pyspy",
        "The code that asked for the most I/O wait: the leaf-most Python frame outside the socket modules (socket.py, ssl.py, selectors.py, io.py), e.g. the HTTP or database client call; the dependencies' addresses are io_peers.",
        kind="text",
    ),
    _def(
        "io_peers",
        "text",
        "system",
        "The target's outbound TCP connections as the window closed, by peer (the most waited on first, at most 3): address, connections, and its threads blocked on them at that moment; 'none' if it had none (system.json outbound).",
        kind="text",
    ),
    _def(
        "io_peer_top",
        "text",
        "system",
        "The address of the first of io_peers: the dependency most threads were blocked on as the window closed (else the one with the most connections); '' if none.",
        kind="text",
    ),
    _def(
        "io_wait_top_frame_share",
        "share",
        "proc,pyspy",
        "Share of the I/O wait time spent at io_wait_top_frame.",
    ),
    _def(
        "busy_threads_mean",
        "threads",
        "proc",
        "Busy time / window: how many threads were busy on average (0.2 = one thread busy a fifth of the time).",
    ),
    _def(
        "running_threads_mean",
        "threads",
        "proc",
        "Running time / window: the average number of the target's threads on a CPU.",
    ),
    _def(
        "cpu_demand_threads_mean",
        "threads",
        "proc",
        "(Running + runnable time) / window: the average number of threads that wanted a CPU.",
    ),
    _def(
        "runnable_per_core",
        "ratio",
        "proc,system",
        "cpu_demand_threads_mean / cores_available. Above 1 the target asks for more cores than it has.",
        better="lower",
    ),
    _def(
        "runq_to_oncpu_ratio",
        "ratio",
        "proc",
        "Runnable time / running time: how long threads wait for a core per second they run.",
        better="lower",
    ),
    # --- scheduling, from /proc ---
    _def(
        "runnable_threads_mean",
        "threads",
        "proc",
        "Mean over ticks of the number of the target's threads in state R (running or waiting for a core).",
    ),
    _def(
        "runnable_threads_p95",
        "threads",
        "proc",
        "95th percentile over ticks of the number of threads in state R.",
        better="lower",
    ),
    _def(
        "ctx_switches_voluntary_per_s",
        "1/s",
        "proc",
        "Voluntary context switches of all threads per second (blocking).",
    ),
    _def(
        "ctx_switches_involuntary_per_s",
        "1/s",
        "proc",
        "Involuntary context switches per second (preempted: time slice used up or a higher-priority task woke).",
        better="lower",
    ),
    _def(
        "involuntary_switch_share",
        "share",
        "proc",
        "Involuntary / all context switches.",
        better="lower",
    ),
    _def(
        "migrations_per_s",
        "1/s",
        "proc",
        "Moves of the target's threads between CPUs per second (se.nr_migrations).",
        better="lower",
    ),
    _def(
        "migrations_per_busy_thread_s",
        "1/s",
        "proc",
        "migrations_per_s / threads_busy.",
        better="lower",
    ),
    _def(
        "runq_delay_p50_ms",
        "ms",
        "proc",
        "Median run-queue delay per timeslice: per thread and tick interval, schedstat run_delay / timeslices, weighted by timeslices.",
        better="lower",
    ),
    _def(
        "runq_delay_p99_ms",
        "ms",
        "proc",
        "99th percentile of the same. perf's sched view (if recorded) gives the per-event distribution.",
        better="lower",
    ),
    # --- the system: cores, libraries, thread-pool settings ---
    _def(
        "cores_available",
        "cores",
        "system",
        "CPUs the target may really use: affinity and cpuset, capped by the cgroup CPU quota.",
    ),
    _def("logical_cpus", "CPUs", "system", "Logical CPUs of the host."),
    _def("physical_cores", "cores", "system", "Physical cores of the host."),
    _def(
        "cpu_quota_cores",
        "cores",
        "system",
        "cgroup CPU quota (cpu.max / cfs_quota_us), null when unlimited.",
    ),
    _def("cpus_usable", "text", "system", "CPU list the target may run on, e.g. 0-7.", kind="text"),
    _def(
        "openmp_loaded",
        "bool",
        "system",
        "1 if an OpenMP runtime (libgomp, libiomp5, libomp) is loaded.",
    ),
    _def(
        "blas_library",
        "text",
        "system",
        "BLAS libraries loaded (OpenBLAS, MKL, BLIS).",
        kind="text",
    ),
    _def(
        "ml_runtime",
        "text",
        "system",
        "Inference runtimes loaded (onnxruntime, libtorch, tensorflow, openvino).",
        kind="text",
    ),
    _def(
        "pool_threads_env",
        "threads",
        "system",
        "Smallest of OMP/MKL/OPENBLAS/... _NUM_THREADS set in the target's environment; null if none is set (the libraries then default to one thread per visible CPU).",
    ),
    _def(
        "pool_env_set",
        "bool",
        "system",
        "1 if any of OMP/MKL/OPENBLAS/... _NUM_THREADS is set in the target's environment, 0 if none is.",
    ),
    _def(
        "pin_suggestion",
        "text",
        "system",
        "With 4 or more usable CPUs: a split that keeps the first eighth (at least one) for the web server and I/O threads, e.g. 'cores 1-7 for inference, 0 for the web server'.",
        kind="text",
    ),
    _def(
        "intra_op_suggestion",
        "threads",
        "proc,system",
        "max(1, floor(cores_available / service_app_threads_busy)): intra-op threads per application thread that would fit the cores, counting the application threads of every process of the service that shares them.",
    ),
    _def(
        "service_cpu_bound_threads",
        "threads",
        "proc",
        "cpu_bound_threads summed over the service's processes captured together (a pre-fork server's workers): the threads that compete for the cores they share (a process alone: its own).",
    ),
    _def(
        "service_app_threads_busy",
        "threads",
        "proc,pyspy",
        "app_threads_busy summed over the service's processes: every application thread that calls the native pools on the shared cores.",
    ),
    _def(
        "service_native_threads_busy",
        "threads",
        "proc,pyspy",
        "native_threads_busy summed over the service's processes.",
    ),
    _def(
        "pool_size_in_force",
        "threads",
        "system",
        "The size the native pools run with now: the smallest pool variable set in the target's environment (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS, MKL_NUM_THREADS ...), else the CPUs the libraries see (their default).",
    ),
    _def(
        "intra_op_threads_per_app",
        "threads",
        "proc,pyspy",
        "1 + native_threads_busy / app_threads_busy: the threads each application thread fans out to (itself plus its share of the busy intra-op pools).",
    ),
    # --- on-CPU time and stages ---
    _def(
        "oncpu_samples",
        "samples",
        "proc,pyspy",
        "On-CPU samples categorised: perf's samples; without perf, py-spy's samples weighted by the thread's on-CPU fraction at that moment (on-CPU seconds x py-spy rate).",
    ),
    _def(
        "oncpu_source",
        "text",
        "proc,pyspy",
        "Where on-CPU stacks came from: 'perf+py-spy' (native kernels known) or 'py-spy' (Python frames only).",
        kind="text",
    ),
    _def(
        "oncpu_native_share",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples that had native frames (0 without perf).",
    ),
    _def(
        "oncpu_share_preprocess",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples in preprocessing (decode, resize, tokenise, normalise, JSON parsing, pandas).",
    ),
    _def(
        "oncpu_share_postprocess",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples in postprocessing: what a thread that calls the model runs after the model call in its handler (decoding and filtering the output, building the response), or code named like postprocessing.",
    ),
    _def(
        "oncpu_share_serialisation",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples in serialising responses (JSON, pickle, protobuf).",
    ),
    _def(
        "oncpu_share_compute",
        "share",
        "perf",
        "Share of on-CPU samples in model compute kernels (GEMM, convolution, attention). Needs native stacks: null without perf.",
    ),
    _def(
        "oncpu_share_memory",
        "share",
        "perf",
        "Share of on-CPU samples in memory-bound kernels (memcpy/memset, copies, transposes, casts, elementwise). Needs native stacks: null without perf.",
    ),
    _def(
        "oncpu_share_allocator",
        "share",
        "perf",
        "Share of on-CPU samples in the allocator (malloc/free, page faults). Needs native stacks: null without perf.",
        better="lower",
    ),
    _def(
        "kernel_share_compute",
        "share",
        "perf",
        "Share of on-CPU samples whose leaf-most kernel frame is a compute kernel (GEMM, convolution), in any stage: oncpu_share_compute counts only those inside the model. Needs native stacks: null without perf.",
    ),
    _def(
        "kernel_share_memory",
        "share",
        "perf",
        "Share of on-CPU samples whose leaf-most kernel frame is memory-bound (copies, casts, elementwise, BLAS levels 1-2), in any stage (a copy in preprocessing too). Needs native stacks: null without perf.",
    ),
    _def(
        "kernel_share_allocator",
        "share",
        "perf",
        "Share of on-CPU samples in the allocator or the page-fault path, in any stage: a first touch of fresh memory under a copy counts here, whatever code made the copy. Needs native stacks: null without perf.",
        better="lower",
    ),
    _def(
        "oncpu_share_model",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples in model calls whose kernel is unknown (no native stack).",
    ),
    _def(
        "oncpu_share_other",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples neither the call structure nor the frames' names could place (request handling, business logic, the interpreter): the unexplained share every report shows. Large, it lowers the confidence of a verdict that rests on the on-CPU composition.",
    ),
    _def(
        "oncpu_share_inference",
        "share",
        "proc,pyspy",
        "oncpu_share_compute + oncpu_share_memory + oncpu_share_model: time inside the model.",
    ),
    _def(
        "memory_top_function",
        "text",
        "perf",
        "The leaf function with most samples in memory-bound or allocator kernels, in any stage (kernel_share_memory, kernel_share_allocator).",
        kind="text",
    ),
    _def(
        "preprocess_top_function",
        "text",
        "proc,pyspy",
        "The leaf function with most preprocessing samples.",
        kind="text",
    ),
    _def(
        "preprocess_threads",
        "threads",
        "proc,pyspy",
        "Threads with at least 10% of the preprocessing samples.",
    ),
    _def(
        "preprocess_top_thread_share",
        "share",
        "proc,pyspy",
        "Share of preprocessing samples in the busiest preprocessing thread (1.0 = serial).",
    ),
    _def(
        "preprocess_top_thread_stage_share",
        "share",
        "proc,pyspy",
        "Share of that thread's own on-CPU samples that are preprocessing: what a cheaper stage gives back where that thread sets the throughput (a serial stage), whatever other threads (a native pool, spinning or not) add to the process's CPU.",
    ),
    _def(
        "preprocess_top_thread_busy",
        "share",
        "proc,pyspy",
        "How busy that thread was: its busy time / the time it was seen. Near 1 the stage is saturated and sets the throughput.",
    ),
    _def(
        "compute_top_function",
        "text",
        "proc,pyspy",
        "The leaf function with most compute/memory/model samples.",
        kind="text",
    ),
    _def(
        "oncpu_top_function",
        "text",
        "proc,pyspy",
        "The leaf function with most on-CPU samples.",
        kind="text",
    ),
    _def(
        "model_unnamed_library",
        "text",
        "perf",
        "The library of the most common leaf frame of the model-call samples no kernel pattern placed (oncpu_share_model), when perf could not name that frame ('[unknown]': the library has no symbols, a stripped build), e.g. 'onnxruntime_pybind11_state.so'; '' when that frame is named. Needs native stacks: null without perf.",
        kind="text",
    ),
    # --- native thread pools ---
    _def(
        "pool_threads",
        "threads",
        "perf",
        "Threads without Python frames that belong to a native pool (OpenBLAS, OpenMP, MKL, onnxruntime, torch): most of their on-CPU native frames are in its libraries (rules/frames.toml [[pool]]).",
    ),
    _def(
        "pool_cpu_share",
        "share",
        "perf",
        "Share of on-CPU samples on native pool threads.",
    ),
    _def(
        "oncpu_share_spin",
        "share",
        "perf",
        "Share of on-CPU samples spinning in a native pool's wait loops (blas_thread_server, exec_blas, gomp barriers, kmp waits, sched_yield), in pool threads or in the application threads that started the parallel region: CPU spent waiting, not computing.",
        better="lower",
    ),
    _def(
        "spin_share_contended",
        "share",
        "perf",
        "The spin that costs the work: share of on-CPU samples spinning in application threads (a parallel region waiting for its helpers), plus the pool threads' spin in proportion to how much other threads waited for a core (runq_to_oncpu_ratio, at most 1): a pool thread spinning on a core no thread wanted takes nothing from the service.",
        better="lower",
    ),
    _def(
        "pool_name",
        "text",
        "perf",
        "The native pool with the most on-CPU and spin time.",
        kind="text",
    ),
    _def(
        "pool_size_fix",
        "text",
        "perf",
        "The setting that sizes that pool, with the value that fits the cores for the service's application threads (intra_op_suggestion), e.g. OPENBLAS_NUM_THREADS=1; where that value is the one in force (pool_size_in_force), the next lever instead (fewer threads calling the pool, batching).",
        kind="text",
    ),
    # --- stages by call structure ---
    _def(
        "oncpu_share_placed",
        "share",
        "proc,pyspy",
        "Share of on-CPU samples whose stage the call structure decided (inside the model call, before or after it in the handler, or in a thread feeding the model's threads) rather than the frames' names.",
    ),
    _def(
        "compute_share_framework",
        "share",
        "perf",
        "Of the compute-kernel on-CPU time, the share whose stack holds a model framework's frame known by its library (torch.nn, onnxruntime, transformers, libtorch, ...: frames.toml's model category, file patterns only): the model's kernels; the rest is numeric code called from the service's own (NumPy, SciPy). 0 without compute samples; null without perf.",
    ),
    _def(
        "model_call_threads",
        "threads",
        "proc,pyspy",
        "Threads seen calling the model: a model framework's frame (onnxruntime run, a torch module's call) or, with perf, a native compute kernel, in their on-CPU stacks.",
    ),
    _def(
        "model_call_site",
        "text",
        "proc,pyspy",
        "The frame that calls the model most (the handler's line, or the line of the GEMM): where preprocessing ends and postprocessing begins.",
        kind="text",
    ),
    _def(
        "feeder_threads",
        "threads",
        "proc,pyspy",
        "Threads that never call the model but hand work to the threads that do (a queue put, an executor submit, a thread-pool run; or, with perf, they woke those threads' waits for work): a preprocessing stage.",
    ),
    # --- locks, from /proc and py-spy ---
    _def(
        "lock_hotspots",
        "locks",
        "proc,pyspy",
        "Locks (futex addresses, or lock sites on Python 3.13+) that two or more threads waited on.",
        better="lower",
    ),
    _def(
        "lock_top_address",
        "text",
        "proc,pyspy",
        "Address of the lock threads waited on longest.",
        kind="text",
    ),
    _def(
        "lock_top_waiters",
        "threads",
        "proc,pyspy",
        "Distinct threads that waited on that lock.",
        better="lower",
    ),
    _def(
        "lock_top_wait_s",
        "thread-s",
        "proc,pyspy",
        "Total time threads waited on that lock.",
        better="lower",
    ),
    _def("lock_top_share", "share", "proc,pyspy", "That wait time / busy time.", better="lower"),
    _def(
        "lock_top_site",
        "text",
        "proc,pyspy",
        "Where the waiters wait: their most common leaf Python frame.",
        kind="text",
    ),
    _def(
        "lock_top_holder_site",
        "text",
        "proc,pyspy",
        "Inferred: what the thread inside the locked region was running while others waited (the most common stack of a running thread passing through the waiters' function).",
        kind="text",
    ),
    _def(
        "lock_top_holder_gil_wait_share",
        "share",
        "perf_sched",
        "Of the time the top lock was held (from the holder's acquisition to the release that woke a waiter, measured by perf), the share its holder spent waiting for the GIL: near 1, the lock is slow because its holder queues for the GIL, and what holds the GIL sets the lock's cost. null without perf's futex waits on the GIL.",
    ),
    _def(
        "lock_waiters_max",
        "threads",
        "proc,pyspy",
        "Most threads seen waiting on that lock at one tick.",
        better="lower",
    ),
    # --- the GIL ---
    _def(
        "gil_waiters_mean",
        "threads",
        "proc,system",
        "Average number of threads blocked on the GIL at a tick.",
        better="lower",
    ),
    _def(
        "gil_waiters_max",
        "threads",
        "proc,system",
        "Most threads blocked on the GIL at one tick.",
        better="lower",
    ),
    _def(
        "gil_held_samples",
        "samples",
        "gil",
        "py-spy --gil samples: ticks at which some thread held the GIL.",
    ),
    _def(
        "gil_holder_top",
        "text",
        "gil",
        "The thread that held the GIL most often (py-spy --gil).",
        kind="text",
    ),
    _def("gil_holder_top_share", "share", "gil", "Its share of the GIL-holding samples."),
    _def(
        "gil_holder_top_site",
        "text",
        "gil",
        "The leaf Python frame most often holding the GIL.",
        kind="text",
    ),
    _def(
        "gil_holder_preprocess_share",
        "share",
        "gil",
        "Share of the GIL-holding samples whose stack is preprocessing (frames.toml): the GIL waits that a preprocessing stage causes.",
    ),
    # --- the system ---
    _def(
        "python_version",
        "text",
        "system",
        "Python version of the target (major.minor).",
        kind="text",
    ),
    # --- scheduling, from perf ---
    _def(
        "threads_unseen",
        "threads",
        "proc,perf_sched",
        "Threads of the target perf's scheduler trace saw and the /proc sampler did not (alive less than two of its ticks): their time, from the trace, joins every busy-time share.",
    ),
    _def(
        "busy_share_unseen_threads",
        "share",
        "proc,perf_sched",
        "Of the busy thread-time, the share of threads only perf's scheduler trace saw (threads_unseen): running and runnable between their switches, blocked time classed by the futex wait covering it (a blocked period nothing explains is not busy).",
    ),
    _def(
        "threads_started_per_s",
        "1/s",
        "perf_sched",
        "Threads of the target started per second of perf's trace: those that switched in it and were not alive at the capture's first /proc tick.",
    ),
    _def(
        "threads_started_life_ms_p50",
        "ms",
        "perf_sched",
        "Median lifetime of the threads started during the trace that also ended in it (first to last scheduler event).",
    ),
    _def(
        "busy_share_started_threads",
        "share",
        "perf_sched",
        "Thread-time the threads started during the trace took, per second, against busy_threads_mean (at most 1): their lives (first event to last, or the trace's end) and the other threads' waits they ended (perf's waker: a join, a result, the GIL handed over).",
    ),
    _def(
        "oncpu_share_array_loops",
        "share",
        "perf",
        "Share of on-CPU samples whose leaf-most user-space frame is the array library's own loop code (NumPy's elementwise, reduction and iteration loops: [structure] array_loops), outside any stage and model call (category other or memory). Compute or memory by the span touched (touched_to_llc), not by the loop's name.",
    ),
    _def(
        "oncpu_share_other_array_loops",
        "share",
        "perf",
        "The part of oncpu_share_other that is the array library's own loops: unplaced in a stage, but known to be array arithmetic (a rule scored by oncpu_share_array_loops explains it).",
    ),
    _def(
        "touched_mb",
        "MiB",
        "system",
        "Memory the target accessed from the start of the capture to the window's end: its pages' accessed bits cleared (/proc/PID/clear_refs) then counted (smaps_rollup's Referenced). The span its loops ran over, shared pages included.",
    ),
    _def(
        "touched_to_llc",
        "ratio",
        "system",
        "touched_mb against the largest CPU cache (the last-level cache): below 1, all the data the process touched fits in the cache, so no loop of it streams from DRAM.",
    ),
    _def(
        "thread_lifecycle_cpu_share",
        "share",
        "perf",
        "Share of the process's on-CPU samples (perf, kernel frames included) starting or ending threads and processes: clone, fork, exit, wait ([structure] lifecycle in frames.toml). What a thread per request costs, as opposed to the work it runs.",
        better="lower",
    ),
    _def(
        "sched_runq_delay_p50_ms",
        "ms",
        "perf_sched",
        "Median run-queue delay per event, measured by perf: from a preemption, or from a wakeup by a thread of the target, to running again.",
    ),
    _def("sched_runq_delay_p99_ms", "ms", "perf_sched", "99th percentile of the same."),
    _def("sched_runq_delay_max_ms", "ms", "perf_sched", "Longest of the same."),
    _def(
        "sched_runq_events",
        "events",
        "perf_sched",
        "Events in that distribution (wakeups by other processes or interrupts are not seen by a per-process recording and are not in it).",
    ),
    _def(
        "sched_switches_voluntary_per_s",
        "1/s",
        "perf_sched",
        "Times per second a thread of the target blocked (left the CPU not runnable), from perf's switch events.",
    ),
    _def(
        "sched_switches_involuntary_per_s",
        "1/s",
        "perf_sched",
        "Times per second a thread of the target was preempted while runnable.",
    ),
    _def(
        "sched_migrations_per_s",
        "1/s",
        "perf_sched",
        "Times per second a thread came back on a different CPU than it left.",
    ),
    _def(
        "offcpu_top_site",
        "text",
        "perf_sched,pyspy",
        "Where threads blocked longest: the leaf Python frame and the native frame they blocked in (perf sched_switch stacks joined with py-spy).",
        kind="text",
    ),
    _def(
        "offcpu_top_share",
        "share",
        "perf_sched",
        "That site's share of all blocked (off-CPU, not runnable) thread time.",
    ),
    # --- locks, from perf's futex tracepoints ---
    _def(
        "futex_wait_s",
        "thread-s",
        "perf_sched",
        "Time threads spent in futex waits (locks, conditions, the GIL), measured per call by the futex tracepoints.",
    ),
    _def(
        "futex_lock_wait_s",
        "thread-s",
        "perf_sched",
        "The part of it spent waiting for locks (not the GIL, not a condition or queue wait for work).",
    ),
    _def(
        "futex_top_address",
        "text",
        "perf_sched",
        "The lock address threads waited on longest (perf futex tracepoints).",
        kind="text",
    ),
    _def("futex_top_waiters", "threads", "perf_sched", "Distinct threads that waited on it."),
    _def("futex_top_wait_s", "thread-s", "perf_sched", "Total time they waited on it."),
    _def(
        "futex_top_site",
        "text",
        "perf_sched,pyspy",
        "Where they wait: the most common leaf Python frame, else native frame, of the waits.",
        kind="text",
    ),
    _def(
        "futex_top_holder",
        "text",
        "perf_sched",
        "Measured holder: the thread that most often released the lock to a waiter (its FUTEX_WAKE on the address, or its wakeup of the waiter).",
        kind="text",
    ),
    _def(
        "futex_top_holder_site",
        "text",
        "perf_sched,pyspy",
        "What the releasing threads ran while the waiters waited (py-spy's leaf Python frame, else perf's native leaf).",
        kind="text",
    ),
    _def(
        "lock_top_library",
        "text",
        "system",
        "The mapped file whose own writable data (.data, .bss) holds the top lock's address: a library's static mutex ('' for a lock in the heap or elsewhere: the application's, or one a library allocated).",
        kind="text",
    ),
    _def(
        "lock_top_pool",
        "text",
        "system",
        "The native pool (frames.toml [[pool]]) whose library holds the top lock: the pool serialises the calls that reach it, and the waits are its cost. '' where none was found, which includes bundles whose system.json has no data_segments (lock_top_library is then unmeasured).",
        kind="text",
    ),
    _def(
        "lock_top_holder_source",
        "text",
        "proc,pyspy",
        "How lock_top_holder_site was found: 'measured' (perf saw the releaser) or 'inferred' (a running thread inside the locked function).",
        kind="text",
    ),
    _def(
        "native_lock_wait_share",
        "share",
        "perf_sched,proc",
        "Time threads without Python frames waited on mutexes (native stack in __lll_lock_wait, pthread_mutex_lock) / busy time; counted as lock time, not idle.",
    ),
    # --- false sharing (perf c2c) ---
    _def(
        "c2c_lines_contended",
        "lines",
        "c2c",
        "Cache lines with HITM loads (a load that found the line modified in another core's cache).",
    ),
    _def(
        "c2c_hitm_load_share",
        "share",
        "c2c",
        "HITM loads / all sampled loads (perf c2c): how much of the memory traffic is cache lines bouncing between cores.",
    ),
    _def("c2c_top_line_address", "text", "c2c", "The cache line with most HITMs.", kind="text"),
    _def("c2c_top_line_hitm_share", "share", "c2c", "Its share of all HITMs."),
    _def(
        "c2c_top_line_offsets",
        "offsets",
        "c2c",
        "Distinct offsets within that line that were accessed: 2 or more is the signature of false sharing (different variables on one line).",
    ),
    _def(
        "c2c_top_line_threads",
        "threads",
        "c2c",
        "Threads (or CPUs, when perf did not report threads) that touched that line.",
    ),
    _def(
        "c2c_top_line_symbols",
        "text",
        "c2c",
        "The functions (or source lines) that touch that line.",
        kind="text",
    ),
    # --- shared cache lines from sampled registers (false_sharing collector) ---
    _def(
        "false_sharing_lines",
        "lines",
        "false_sharing",
        "Cache lines that two or more threads write, with a field (overlapping writes merged) written by some of them and not the others, from the addresses the sampled instructions write: false-sharing candidates.",
        better="lower",
    ),
    _def(
        "false_sharing_share",
        "share",
        "false_sharing",
        "Samples whose instruction accesses one of those lines / all the process's cpu-clock samples in this recording (user and kernel).",
        better="lower",
    ),
    _def(
        "false_sharing_top_line",
        "text",
        "false_sharing",
        "The false-sharing candidate with most samples (its 64-byte line address).",
        kind="text",
    ),
    _def(
        "false_sharing_top_share",
        "share",
        "false_sharing",
        "Its share of the process's samples.",
        better="lower",
    ),
    _def(
        "false_sharing_top_offsets",
        "offsets",
        "false_sharing",
        "Distinct fields (non-overlapping offset ranges) written in that line.",
    ),
    _def(
        "false_sharing_top_threads",
        "threads",
        "false_sharing",
        "Threads that write that line (its writers).",
    ),
    _def(
        "false_sharing_top_site",
        "text",
        "false_sharing",
        "The instruction that writes it most, with its function and source line where debug info exists.",
        kind="text",
    ),
    _def(
        "true_sharing_lines",
        "lines",
        "false_sharing",
        "Cache lines with one address (overlapping fields) written by two or more threads: a hot shared atomic counter or lock word.",
        better="lower",
    ),
    _def(
        "true_sharing_share",
        "share",
        "false_sharing",
        "Samples whose instruction accesses one of those lines / all the process's samples.",
        better="lower",
    ),
    _def(
        "true_sharing_top_address",
        "text",
        "false_sharing",
        "The address written by several threads on the true-sharing line with most samples.",
        kind="text",
    ),
    _def(
        "true_sharing_top_share",
        "share",
        "false_sharing",
        "That line's share of the process's samples.",
        better="lower",
    ),
    _def(
        "true_sharing_top_threads", "threads", "false_sharing", "Threads that write that address."
    ),
    _def(
        "true_sharing_top_site",
        "text",
        "false_sharing",
        "The instruction that writes it most, with its function and source line.",
        kind="text",
    ),
    _def(
        "false_sharing_coverage",
        "share",
        "false_sharing",
        "Of the user-space samples whose instructions (at the IP or the one before) write memory, the share whose written address could be computed (the rest: base register overwritten, thread-local or vector addressing, code not readable).",
    ),
    _def(
        "false_sharing_c2c_agrees",
        "bool",
        "false_sharing,c2c",
        "Where perf c2c also ran: 1 when the line found here is among c2c's contended lines, 0 when not.",
    ),
    # --- hardware counters (perf stat) ---
    _def(
        "ipc",
        "ratio",
        "perf_stat",
        "Instructions per cycle (perf stat). Below ~0.5 with many cache misses suggests memory-bound code.",
    ),
    _def("cache_miss_ratio", "share", "perf_stat", "cache-misses / cache-references (perf stat)."),
)


def _index(defs: tuple[MetricDef, ...]) -> Mapping[str, MetricDef]:
    out: dict[str, MetricDef] = {}
    for d in defs:
        if d.name in out:
            raise ValueError(f"metric {d.name} is in the catalogue twice")
        out[d.name] = d
    return MappingProxyType(out)


#: name -> definition, in catalogue order (read-only)
METRICS: Mapping[str, MetricDef] = _index(CATALOGUE)


def known_metrics() -> Mapping[str, MetricDef]:
    """Every metric diagnose computes, by name."""
    return METRICS
